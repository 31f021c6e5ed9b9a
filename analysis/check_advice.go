package analysis

import (
	"time"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/report"
)

// groupAdvice is what check holds a group's config objects against: the
// recommendation, the call policy's bounds and the rates, in one form
// whether they were just computed (adviceOf) or read from a saved
// report's model (savedAdvice), so that a saved report needs no
// made-up histogram or analysis.
type groupAdvice struct {
	// timeout is the recommended timeout; connectTimeout the recommended
	// connect timeout and longestConnect the longest reasonable one (0:
	// none).
	timeout, connectTimeout, longestConnect time.Duration
	// perTry and deadline are the call policy's (0: none); methods the
	// request methods its calls had in the data.
	perTry, deadline time.Duration
	methods          []string
	// rates are Little's law's figures; rateKnown false: no rate.
	rateKnown      bool
	rate, peakRate float64
	meanLatency    time.Duration
	bulkhead       int
	inFlightPeak   float64
}

// adviceOf is a group's advice as the analysis computed it.
func adviceOf(res advice.Result) groupAdvice {
	ll := res.LittlesLaw
	return groupAdvice{timeout: res.Recommendation.Timeout, connectTimeout: res.Recommendation.ConnectTimeout,
		longestConnect: res.Recommendation.Connect.Longest, perTry: res.Policy.PerTryTimeout, deadline: res.Policy.Deadline,
		methods: res.Policy.Methods, rateKnown: ll.RateKnown, rate: ll.Rate, peakRate: ll.PeakRate, meanLatency: ll.MeanLatency,
		bulkhead: ll.Bulkhead, inFlightPeak: ll.InFlightPeak}
}

// savedAdvice is a group's advice as a saved report gives it: its
// recommendation, its rates and Little's law, its policy's bounds.
func savedAdvice(g report.Group) groupAdvice {
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	rec := g.Recommendation
	a := groupAdvice{timeout: seconds(rec.TimeoutSeconds), meanLatency: seconds(g.MeanSeconds)}
	if c := rec.ConnectTimeoutSeconds; c != nil {
		a.connectTimeout = seconds(*c)
	}
	ll := g.LittlesLaw
	if ll.RatePerSecond != nil {
		a.rateKnown, a.rate = true, *ll.RatePerSecond
		if ll.PeakRatePerSecond != nil {
			a.peakRate = *ll.PeakRatePerSecond
		}
	}
	if ll.Bulkhead != nil && ll.InFlightPeak != nil {
		a.bulkhead, a.inFlightPeak = *ll.Bulkhead, *ll.InFlightPeak
	}
	if p := g.Policy; p != nil {
		a.perTry = seconds(p.PerTryTimeoutSeconds)
		if d := p.DeadlineSeconds; d != nil {
			a.deadline = seconds(*d)
		}
	}
	return a
}
