package target

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/outfile"
	"github.com/tunetimeout/tunetimeout/report"
)

// Rendered is the snippet of one target for one report.
type Rendered struct {
	Target
	Body []byte
	// Notes is the header of a target whose format has no comments
	// (Explain): where each number comes from. Nil for the others, whose
	// Body starts with it.
	Notes []string
}

// RenderAll renders the snippets of targets for r, in their order, each
// with its notes. Every one is rendered before any is used: an error, or
// ctx cancelled, returns none.
func RenderAll(ctx context.Context, r *report.Report, targets []Target, o Options) ([]Rendered, error) {
	out := make([]Rendered, 0, len(targets))
	for _, t := range targets {
		body, err := t.Render(r, o)
		if err != nil {
			return nil, err
		}
		var notes []string
		if t.Comment == "" {
			if notes, err = t.Explain(r, o); err != nil {
				return nil, err
			}
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		out = append(out, Rendered{Target: t, Body: body, Notes: notes})
	}
	return out, nil
}

// Embed adds the snippets to r.Snippets, for the report formats that carry
// them inside the document (report.EmbedsSnippets).
func Embed(r *report.Report, rs []Rendered) {
	for _, s := range rs {
		r.Snippets = append(r.Snippets, report.Snippet{Target: s.Name, File: s.File, Notes: s.Notes, Text: string(s.Body), Language: s.Language})
	}
}

// Print writes the snippets to out. alone says nothing was printed before
// them (the snippet command, not after a report): one snippet alone is
// then written bare, so that it can be redirected into a file, and the
// notes of a format without comments go to notes, as "# " lines. Otherwise
// each snippet follows a "# --- FILE (TARGET) ---" line and its notes as
// comments, a blank line before each but the first printed alone.
func Print(out, notes io.Writer, rs []Rendered, alone bool) error {
	if alone && len(rs) == 1 {
		for _, n := range rs[0].Notes {
			fmt.Fprintf(notes, "# %s\n", n)
		}
		_, err := out.Write(rs[0].Body)
		return err
	}
	for i, s := range rs {
		if i > 0 || !alone {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "# --- %s (%s) ---\n", s.File, s.Name)
		for _, n := range s.Notes {
			fmt.Fprintf(out, "# %s\n", n)
		}
		if _, err := out.Write(s.Body); err != nil {
			return err
		}
	}
	return nil
}

// WriteDir writes each snippet into dir, made if need be (and left, empty,
// if the writing then fails), as its target's File, all or none
// (outfile.Temps.WriteAll: temporary files renamed once every one is
// written and ctx is not cancelled), and then says on log
// which files it wrote. A file's notes are not written: the formats that
// have no comments have no place for them.
func WriteDir(ctx context.Context, temps *outfile.Temps, dir string, rs []Rendered, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := make([]outfile.File, len(rs))
	names := make([]string, len(rs))
	for i, s := range rs {
		files[i] = outfile.Bytes(filepath.Join(dir, s.File), s.Body)
		names[i] = s.File
	}
	if err := temps.WriteAll(ctx, files...); err != nil {
		return err
	}
	fmt.Fprintf(log, "Wrote %s to %s.\n", strings.Join(names, ", "), dir)
	return nil
}
