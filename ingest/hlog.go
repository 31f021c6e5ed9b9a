package ingest

import (
	"bytes"
	"regexp"
)

// The HdrHistogram interval log (.hlog, docs/method.md#11-sources-of-latency) holds
// histograms, not samples: package histogram reads it (LogReader). It is
// in the registry so that --input names it and auto-detection finds it.
func init() {
	Register(Format{
		Name:       "hlog",
		Priority:   10,
		Summary:    "HdrHistogram interval logs (tunetimeout summarize, jHiccup, Java's HistogramLogWriter, wrk2...)",
		Sniff:      sniffHlog,
		Histograms: true,
	})
}

// hlogLine is a histogram line: [Tag=t,]start,length,max,base64.
var hlogLine = regexp.MustCompile(`^(Tag=[^,]*,)?[0-9.]+,[0-9.]+,[0-9.]+,HIST[A-Za-z0-9+/]`)

// sniffHlog accepts the lines an interval log starts with: a "#[" comment
// (the writers' "#[Logged with ...", "#[Histogram log format version",
// "#[StartTime: "), the legend, or a histogram line.
func sniffHlog(line []byte) bool {
	return bytes.HasPrefix(line, []byte("#[")) ||
		bytes.HasPrefix(line, []byte(`"StartTimestamp"`)) ||
		hlogLine.Match(line)
}
