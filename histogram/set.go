package histogram

import "time"

// Group is everything measured for one group of samples (a route, a method,
// or the whole input).
type Group struct {
	Name     string
	Latency  *Latency
	Excluded map[string]int64 // reason -> count of samples not used for latency
	Arrivals *Arrivals        // every sample with a timestamp, excluded ones too
}

// Set holds the groups of one analysis by name.
type Set struct{}

func NewSet() *Set                      { panic("unimplemented") }
func (s *Set) Group(name string) *Group { panic("unimplemented") } // creates it on first use
func (s *Set) Groups() []*Group         { panic("unimplemented") } // sorted by name
func (s *Set) Merge(o *Set)             { panic("unimplemented") }

// Arrivals counts calls per second of wall time, for measured call rates.
type Arrivals struct{}

func NewArrivals() *Arrivals            { panic("unimplemented") }
func (a *Arrivals) Add(t time.Time)     { panic("unimplemented") }
func (a *Arrivals) Count() int64        { panic("unimplemented") }
func (a *Arrivals) Span() time.Duration { panic("unimplemented") } // last second - first second + 1 s
func (a *Arrivals) MeanRate() float64   { panic("unimplemented") } // calls per second over Span; 0 when empty
// Busiest returns the largest number of calls in any window of length w
// (whole seconds, sliding by one second), and where that window starts.
func (a *Arrivals) Busiest(w time.Duration) (calls int64, start time.Time) { panic("unimplemented") }
func (a *Arrivals) Merge(o *Arrivals)                                      { panic("unimplemented") }
