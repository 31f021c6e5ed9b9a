package analysis

import (
	"context"
	"fmt"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// sizeBackoff widens the policy's backoff to what the herd needs, never
// narrowing it: the groups' policies (and so the snippets) carry it. It
// returns the step each policy shows, or "" when nothing changed.
func sizeBackoff(o *Options, a simulate.HerdAdvice) (string, error) {
	po, err := o.Policy.WithDefaults()
	if err != nil {
		return "", err
	}
	base, cap := max(po.BackoffBase, a.Base), max(po.BackoffCap, a.Cap)
	if base == po.BackoffBase && cap == po.BackoffCap {
		return "", nil
	}
	o.Policy.BackoffBase, o.Policy.BackoffCap = base, cap
	return fmt.Sprintf("backoff from %s, capped at %s, widened from the policy's %s capped at %s for the herd: %s",
		human.Seconds(base.Seconds()), human.Seconds(cap.Seconds()), human.Seconds(po.BackoffBase.Seconds()), human.Seconds(po.BackoffCap.Seconds()), a.Reason), nil
}

// RunHerdOnly is the herd without data: --herd and --capacity given, no
// input to read. The report holds the herd alone.
func RunHerdOnly(ctx context.Context, o Options) (*report.Report, error) {
	o.defaults()
	if o.Herd.Clients <= 0 || o.Herd.CapacityPerSecond <= 0 {
		return nil, fmt.Errorf("without data, give %s and %s", usage.Herd, usage.Capacity)
	}
	r := &report.Report{Groups: []report.Group{}}
	r.Input.Files, r.Input.Formats, r.Input.BadExamples, r.Input.Notes, r.Input.Findings = []string{}, []string{}, []string{}, []string{}, []report.Finding{}
	h, _, err := runHerd(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	r.Herd = h
	return r, nil
}

// runHerd replays the herd with the policy's attempts and backoff
// (advice.RunHerd), the crowd and capacity from the flags or the groups.
func runHerd(ctx context.Context, o Options, groups []*histogram.Group) (*report.Herd, simulate.HerdAdvice, error) {
	po, err := o.Policy.WithDefaults()
	if err != nil {
		return nil, simulate.HerdAdvice{}, err
	}
	return advice.RunHerd(ctx, o.Herd, po, o.Simulate.Seed, o.Rate, groups)
}
