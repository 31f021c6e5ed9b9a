package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// complete makes the shell complete flag name of cmd with values, those
// that start with what is typed; no file names.
func complete(cmd *cobra.Command, name string, values ...string) {
	mustComplete(cmd, name, func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, typed) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// completeList is complete for a comma-separated list (--emit envoy,grpc):
// the last element is completed, the ones before it kept, and no space is
// added so that another may follow.
func completeList(cmd *cobra.Command, name string, values ...string) {
	mustComplete(cmd, name, func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := "", typed
		if i := strings.LastIndexByte(typed, ','); i >= 0 {
			done, last = typed[:i+1], typed[i+1:]
		}
		given := map[string]bool{}
		for _, v := range strings.Split(done, ",") {
			given[v] = true
		}
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, last) && !given[v] {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

func mustComplete(cmd *cobra.Command, name string, f cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(name, f); err != nil {
		panic(err) // a flag that does not exist: a bug here, not the user's
	}
}
