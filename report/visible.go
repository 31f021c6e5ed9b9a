package report

import "github.com/tunetimeout/tunetimeout/internal/escape"

// forPeople returns a copy of r for the renderers people read (text,
// Markdown, HTML) in which every text that came from data (file names,
// group names, bad lines, notes, warnings and reasons that quote them, the
// Prometheus source's labels) has its control characters, bidirectional
// controls and line breaks written as visible escapes (escape.Visible): a
// group named "/a\x1b[2J" or "/ok\n== evil ==" can neither drive the
// terminal nor forge a line. JSON keeps the data as they are (WriteJSON
// escapes them in JSON's own syntax) so that snippets rendered from a
// saved report name the same routes. r itself is not changed.
func forPeople(r *Report) *Report {
	v := escape.Visible
	out := *r
	out.Input.Files = visibleAll(r.Input.Files)
	out.Input.BadExamples = visibleAll(r.Input.BadExamples)
	out.Input.Notes = visibleAll(r.Input.Notes)
	if sp := r.SharedPool; sp != nil {
		c := *sp
		c.Verdict = v(sp.Verdict)
		out.SharedPool = &c
	}
	if src := r.Prometheus; src != nil {
		c := *src
		c.URL, c.Metric = v(src.URL), v(src.Metric)
		c.Queries, c.Warnings = visibleAll(src.Queries), visibleAll(src.Warnings)
		c.Summary = append([]SummaryQuantile(nil), src.Summary...)
		for i := range c.Summary {
			c.Summary[i].Labels = v(c.Summary[i].Labels)
		}
		out.Prometheus = &c
	}
	out.Groups = make([]Group, len(r.Groups))
	for i, g := range r.Groups {
		g.Name = v(g.Name)
		g.Recommendation.Steps = visibleSteps(g.Recommendation.Steps)
		g.Recommendation.Warnings = visibleAll(g.Recommendation.Warnings)
		g.LittlesLaw.Verdict = v(g.LittlesLaw.Verdict)
		if p := g.Policy; p != nil {
			c := *p
			c.Steps, c.Warnings = visibleSteps(p.Steps), visibleAll(p.Warnings)
			if p.Method != nil {
				c.Method = ptr(v(*p.Method))
			}
			g.Policy = &c
		}
		if b := g.Buckets; b != nil {
			c := *b
			c.Repairs = visibleAll(b.Repairs)
			c.SuggestedLE = v(b.SuggestedLE)
			g.Buckets = &c
		}
		ex := make(map[string]int64, len(g.Excluded))
		for k, n := range g.Excluded {
			ex[v(k)] += n
		}
		g.Excluded = ex
		out.Groups[i] = g
	}
	return &out
}

func visibleAll(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = escape.Visible(s)
	}
	return out
}

func visibleSteps(in []Step) []Step {
	if in == nil {
		return nil
	}
	out := make([]Step, len(in))
	for i, s := range in {
		s.Rule, s.Reason = escape.Visible(s.Rule), escape.Visible(s.Reason)
		out[i] = s
	}
	return out
}
