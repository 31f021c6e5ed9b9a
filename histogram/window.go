package histogram

// Collapse returns the set's groups with their totals made from their
// cells (AddCell, exact: the cells' histograms add up bucket by bucket),
// and the timed cells of each group by name, in time order: the windows of
// an analysis that keeps them (analyze --window) beside the totals it
// reports. The folds and what was Measured are the set's. A set without intervals (Every)
// collapses to itself, with no windows.
func (s *Set) Collapse() (totals *Set, windows map[string]Windows) {
	if s.every == 0 {
		return s, nil
	}
	totals = NewSet()
	totals.folded, totals.foldedMore, totals.foldedUnnamed = s.folded, s.foldedMore, s.foldedUnnamed
	for name := range s.foldedNames {
		totals.foldName(name)
	}
	windows = make(map[string]Windows, len(s.groups))
	for name, g := range s.groups {
		t := totals.Group(name)
		t.Measured = g.Measured
		starts := g.CellStarts()
		for _, start := range starts {
			t.AddCell(g.CellAt(start))
		}
		if len(starts) > 0 && starts[0] == Untimed {
			starts = starts[1:]
		}
		windows[name] = Windows{g: g, Starts: starts}
	}
	return totals, windows
}

// Windows are one group's timed cells, in time order: Starts, and the
// cells themselves one at a time (Take), since most are kept frozen.
type Windows struct {
	g      *Group
	Starts []int64
}

// Take returns the cell of the i-th window, to be read, not changed, and
// lets the group forget it, so that windows read once, in turn, are freed
// as they are read.
func (w Windows) Take(i int) *Cell {
	c := w.g.CellAt(w.Starts[i])
	delete(w.g.cells, w.Starts[i])
	delete(w.g.frozen, w.Starts[i])
	return c
}

// WindowSeconds is the length of the set's intervals in seconds; 0 when
// it keeps none.
func (s *Set) WindowSeconds() int64 { return s.every }

// CellGroup returns a group holding one cell's samples as a group's
// totals: its histogram, exclusions, connect times and arrivals, for the
// analysis of that window alone.
func CellGroup(name string, c *Cell) *Group {
	g := NewSet().Group(name)
	g.AddCell(c)
	return g
}
