package report

import (
	"fmt"
	"slices"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// Metastability is the closed loop of one dependency under a trigger
// (simulate.RunLoop, docs/metastability.md): does the call policy bring it
// back once the trigger is gone?
type Metastability struct {
	Trigger string `json:"trigger"` // slow:3x:60s, outage:30s, spike:2x:30s
	// TriggerKind (slow, outage or spike), TriggerFactor (0 for an
	// outage) and TriggerSeconds are the trigger read apart, for the
	// HTML's plot of the boundary; not in the JSON, which has Trigger.
	TriggerKind       string  `json:"-"`
	TriggerFactor     float64 `json:"-"`
	TriggerSeconds    float64 `json:"-"`
	TriggerAtSeconds  float64 `json:"trigger_at_seconds"`
	DurationSeconds   float64 `json:"duration_seconds"`
	Workers           int     `json:"workers"`
	WorkersSource     string  `json:"workers_source"` // --workers, --capacity, or the default rule
	Queue             *int    `json:"queue"`          // null: unbounded
	DropExpired       bool    `json:"drop_expired"`
	RatePerSecond     float64 `json:"rate_per_second"`
	RateSource        string  `json:"rate_source"`
	CapacityPerSecond float64 `json:"capacity_per_second"` // workers / mean service time
	Utilization       float64 `json:"utilization"`         // rate / capacity
	Seed              uint64  `json:"seed"`
	// BaselineSuccess and BaselineAttemptsPerRequest are the normal state,
	// measured before the trigger.
	BaselineSuccess            float64 `json:"baseline_success"`
	BaselineAttemptsPerRequest float64 `json:"baseline_attempts_per_request"`
	Recovered                  bool    `json:"recovered"`
	RecoverWithinSeconds       float64 `json:"recover_within_seconds"`
	// RecoverySeconds is how long after the trigger's end the dependency
	// was back to normal for good; null when it was not.
	RecoverySeconds   *float64 `json:"recovery_seconds"`
	PeakLoadRatio     float64  `json:"peak_load_ratio"`     // most attempts/s of a step over the capacity
	FinalGoodputRatio float64  `json:"final_goodput_ratio"` // share of requests served in the last window judged
	EndedSeconds      float64  `json:"ended_seconds"`       // the duration, or earlier when the backlog alone decided
	Reason            string   `json:"reason,omitempty"`    // why not recovered
	Requests          int64    `json:"requests"`
	Attempts          int64    `json:"attempts"`
	// WastedAttempts were served after their caller gave up; Dropped
	// skipped for that (drop_expired); Rejected refused (an outage, a full
	// queue).
	WastedAttempts   int64      `json:"wasted_attempts"`
	DroppedAttempts  int64      `json:"dropped_attempts"`
	RejectedAttempts int64      `json:"rejected_attempts"`
	PeakQueue        int        `json:"peak_queue"`
	Series           LoopSeries `json:"series"`
	// Boundary is the stability boundary: per factor of the trigger (0
	// for an outage), the longest trigger of the sweep the dependency
	// recovered from (every shorter one too); 0 when not even the
	// shortest.
	Boundary []BoundaryPoint `json:"boundary"`
	// Cure is the cheapest change that makes the dependency recover
	// (simulate.FindCure); null when it recovers as it is, or when no
	// change tried does (CureReason says which).
	Cure       *MetastableCure `json:"cure"`
	CureReason string          `json:"cure_reason,omitempty"`
}

// MetastableCure is the cheapest change found, with its numbers and the
// run with it applied.
type MetastableCure struct {
	// Change is retry-budget, attempts, backoff, drop-expired or rate, in
	// the order they are tried (the cheapest first).
	Change             string   `json:"change"`
	RetryBudget        *float64 `json:"retry_budget,omitempty"` // retry-budget: the largest that recovers
	Attempts           *int     `json:"attempts,omitempty"`     // attempts: the most that recover
	BackoffBaseSeconds *float64 `json:"backoff_base_seconds,omitempty"`
	BackoffCapSeconds  *float64 `json:"backoff_cap_seconds,omitempty"`
	Factor             *float64 `json:"factor,omitempty"`          // backoff: x the base and cap; rate: x the rate
	RatePerSecond      *float64 `json:"rate_per_second,omitempty"` // rate: the highest that recovers
	RecoverySeconds    float64  `json:"recovery_seconds"`          // with the change
	PeakLoadRatio      float64  `json:"peak_load_ratio"`
	FinalGoodputRatio  float64  `json:"final_goodput_ratio"`
	Runs               int      `json:"runs"` // closed loops run to find it, its own included
	Summary            string   `json:"summary"`
}

// BoundaryPoint is the stability boundary at one trigger factor, with
// the outcome of every trigger swept at it.
type BoundaryPoint struct {
	Factor                  float64   `json:"factor"`
	LongestRecoveredSeconds float64   `json:"longest_recovered_seconds"`
	SweptSeconds            []float64 `json:"swept_seconds"`
	// Recovered and RecoverySeconds are, per SweptSeconds, whether the
	// dependency recovered from that trigger and how long after it ended
	// (null where not). A recovered trigger may lie beyond one that was
	// not: the boundary counts only the run of recovered ones from the
	// shortest. Reports written before they were kept have neither.
	Recovered       []bool     `json:"recovered,omitempty"`
	RecoverySeconds []*float64 `json:"recovery_seconds,omitempty"`
}

// LoopSeries is the run step by step: per second, the requests that
// arrived, those served, the attempts sent; and the longest queue.
type LoopSeries struct {
	StepSeconds       float64   `json:"step_seconds"`
	DemandPerSecond   []float64 `json:"demand_per_second"`
	GoodputPerSecond  []float64 `json:"goodput_per_second"`
	AttemptsPerSecond []float64 `json:"attempts_per_second"`
	QueueMax          []int     `json:"queue_max"`
}

// metastabilitySection is the closed loop: the dependency, the trigger,
// the answer, and the run at a coarse step.
func metastabilitySection(g Group) *Section {
	if g.Policy == nil || g.Policy.Metastability == nil {
		return nil
	}
	m := g.Policy.Metastability
	queue := "an unbounded queue"
	if m.Queue != nil {
		queue = fmt.Sprintf("a queue of %s", human.Count(int64(*m.Queue)))
	}
	drop := "keeps working on calls whose caller gave up"
	if m.DropExpired {
		drop = "drops calls whose caller gave up"
	}
	answer := fmt.Sprintf("Not recovered within %s: %s.", human.Seconds(m.RecoverWithinSeconds), m.Reason)
	if m.Recovered {
		answer = fmt.Sprintf("Recovered %s after the trigger ended (within %s).", human.Seconds(*m.RecoverySeconds), human.Seconds(m.RecoverWithinSeconds))
	}
	t := &Table{Class: "metastability", Columns: []Column{{Title: "from"}, {Title: "demand/s", Numeric: true}, {Title: "goodput/s", Numeric: true},
		{Title: "attempts/s", Numeric: true}, {Title: "load", Numeric: true}, {Title: "queue", Numeric: true}}}
	s := m.Series
	// At most about 20 rows: neighbouring steps taken together.
	per := max(1, (len(s.DemandPerSecond)+19)/20)
	for i := 0; i < len(s.DemandPerSecond); i += per {
		j := min(len(s.DemandPerSecond), i+per)
		var d, gp, a float64
		q := 0
		for k := i; k < j; k++ {
			d += s.DemandPerSecond[k]
			gp += s.GoodputPerSecond[k]
			a += s.AttemptsPerSecond[k]
			q = max(q, s.QueueMax[k])
		}
		n := float64(j - i)
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: human.Seconds(float64(i) * s.StepSeconds)}, {Text: human.Number(d / n)},
			{Text: human.Number(gp / n)}, {Text: human.Number(a / n)}, {Text: human.Percent(a / n / m.CapacityPerSecond)}, {Text: human.Count(int64(q))}}})
	}
	blocks := []Block{
		textPara(fmt.Sprintf("A dependency of %d workers (%s), %s calls/s at the mean latency, with %s, that %s, serves %s requests/s (%s), %s busy; the trigger %s starts at %s of a %s run. Seed %d.",
			m.Workers, m.WorkersSource, human.Number(m.CapacityPerSecond), queue, drop, human.Number(m.RatePerSecond), m.RateSource,
			human.Percent(m.Utilization), m.Trigger, human.Seconds(m.TriggerAtSeconds), human.Seconds(m.DurationSeconds), m.Seed)),
		para("", strong(answer), text(fmt.Sprintf(" Before the trigger %s of requests succeed with %.3f attempts each; the peak load is %s of the capacity, and in the last window %s of requests succeed.",
			human.Percent(m.BaselineSuccess), m.BaselineAttemptsPerRequest, human.Percent(m.PeakLoadRatio), human.Percent(m.FinalGoodputRatio)))),
		{Table: t},
	}
	if len(m.Boundary) > 0 {
		bt := &Table{Class: "boundary", Columns: []Column{{Title: "trigger"}, {Title: "longest recovered from", Numeric: true}}}
		for _, b := range m.Boundary {
			name := fmt.Sprintf("%s x", human.Number(b.Factor))
			if b.Factor == 0 {
				name = "outage"
			}
			longest := "none swept"
			if b.LongestRecoveredSeconds > 0 {
				longest = human.Seconds(b.LongestRecoveredSeconds)
			}
			if n := len(b.SweptSeconds); n > 0 && b.LongestRecoveredSeconds == b.SweptSeconds[n-1] {
				longest = "all (" + longest + ")"
			}
			bt.Rows = append(bt.Rows, Row{Cells: []Cell{{Text: name}, {Text: longest}}})
		}
		swept := ""
		for i, s := range m.Boundary[0].SweptSeconds {
			if i > 0 {
				swept += ", "
			}
			swept += human.Seconds(s)
		}
		blocks = append(blocks, textPara(fmt.Sprintf("The stability boundary: the longest trigger of this kind, among %s, that the dependency recovers from, every shorter one too (the same run, another trigger).", swept)), Block{Table: bt})
	}
	switch {
	case m.Cure != nil:
		blocks = append(blocks, para("", strong("The cheapest cure: "), text(m.Cure.Summary+fmt.Sprintf(" (%s closed loops run; the changes tried in order: a retry budget, fewer attempts, a longer backoff, %s, a lower rate).", human.Count(int64(m.Cure.Runs)), usage.DropExpired))))
	case m.CureReason != "":
		blocks = append(blocks, para("", strong("No cure found: "), text(m.CureReason+".")))
	}
	return &Section{ID: "metastability", Title: "Metastability (" + m.Trigger + ")", Blocks: blocks}
}

// withBoundaryPlot puts the stability boundary's plot (HTML) after its
// table in blocks, the metastability section of group g with section id
// id; blocks as they are when there is none.
func withBoundaryPlot(id string, g Group, blocks []Block) []Block {
	s, ok := boundaryPlot(id, g)
	if !ok {
		return blocks
	}
	for i, b := range blocks {
		if b.Table != nil && b.Table.Class == "boundary" {
			return slices.Insert(blocks, i+1, Block{Figure: &s})
		}
	}
	return blocks
}

// boundaryPlot is the stability sweep as a grid, the own trigger marked;
// nothing without every cell's outcome (reports written before they
// were kept) or without the trigger read apart (a report read back).
func boundaryPlot(id string, g Group) (plot.Scene, bool) {
	if g.Policy == nil || g.Policy.Metastability == nil || len(g.Policy.Metastability.Boundary) == 0 {
		return plot.Scene{}, false
	}
	m := g.Policy.Metastability
	if m.TriggerKind == "" {
		return plot.Scene{}, false
	}
	title := map[string]string{"slow": "slowdown", "spike": "arrivals", "outage": "trigger"}[m.TriggerKind]
	durations := m.Boundary[0].SweptSeconds
	var rows []plot.BoundaryRow
	for _, b := range m.Boundary {
		if !slices.Equal(b.SweptSeconds, durations) || len(b.Recovered) != len(durations) || len(b.RecoverySeconds) != len(durations) {
			return plot.Scene{}, false
		}
		r := plot.BoundaryRow{Name: human.Number(b.Factor) + "x", Factor: b.Factor, Recovered: b.Recovered, RecoverySeconds: make([]float64, len(durations))}
		if b.Factor == 0 {
			r.Name = "outage"
		}
		for i, v := range b.RecoverySeconds {
			if v != nil {
				r.RecoverySeconds[i] = *v
			}
		}
		rows = append(rows, r)
	}
	own := plot.OwnTrigger{Name: m.Trigger, Factor: m.TriggerFactor, Seconds: m.TriggerSeconds, Recovered: m.Recovered}
	return plot.Boundary(id, title, durations, rows, own, m.RecoverWithinSeconds)
}
