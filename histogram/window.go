package histogram

import (
	"cmp"
	"slices"
)

// Collapse returns the set's groups with their totals made from their
// cells (AddCell, exact: the cells' histograms add up bucket by bucket),
// and the cells of each group by name, sorted by start: the windows of an
// analysis that keeps them (analyze --window) beside the totals it
// reports. The folds are the set's. A set without intervals (Every)
// collapses to itself, with no windows.
func (s *Set) Collapse() (totals *Set, windows map[string][]*Cell) {
	if s.every == 0 {
		return s, nil
	}
	totals = NewSet()
	totals.folded, totals.foldedMore, totals.foldedUnnamed = s.folded, s.foldedMore, s.foldedUnnamed
	for name := range s.foldedNames {
		totals.foldName(name)
	}
	windows = make(map[string][]*Cell, len(s.groups))
	for name, g := range s.groups {
		t := totals.Group(name)
		cells := make([]*Cell, 0, len(g.Cells))
		for _, c := range g.Cells {
			t.AddCell(c)
			if c.Start != Untimed {
				cells = append(cells, c)
			}
		}
		slices.SortFunc(cells, func(a, b *Cell) int { return cmp.Compare(a.Start, b.Start) })
		windows[name] = cells
	}
	return totals, windows
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
