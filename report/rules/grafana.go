package rules

import "encoding/json"

// The metrics of `tunetimeout watch`, which the dashboard shows beside the
// recorded ratios.
const (
	WatchRecommended   = "tunetimeout_recommended_timeout_seconds" // {group}
	WatchQuantile      = "tunetimeout_quantile_seconds"            // {group,quantile}
	WatchQuantileLower = "tunetimeout_quantile_lower_seconds"      // {group,quantile}
	WatchQuantileUpper = "tunetimeout_quantile_upper_seconds"      // {group,quantile}
	WatchCutOff        = "tunetimeout_cut_off_ratio"               // {group,timeout}
	WatchInFlightHang  = "tunetimeout_in_flight_during_hang"       // {group}
	WatchPoolExhausted = "tunetimeout_pool_exhausted"              // {group}
	WatchLastRun       = "tunetimeout_last_run_timestamp_seconds"  // no labels
	WatchLastSuccess   = "tunetimeout_last_run_success"            // no labels
	dashboardSchema    = 39                                        // Grafana 10.x/11.x
	dashboardUID       = "tunetimeout"                             // stable across runs
	datasourceRef      = "${datasource}"                           // the dashboard's variable
	groupFilter        = `group=~"$group"`                         // the dashboard's variable
	panelWidth, height = 12, 8                                     // of 24 columns
	statWidth          = 6                                         // four stats a row
)

// Panel is one query of the dashboard; Dashboard lays them out.
type Panel struct {
	Title  string
	Type   string // "timeseries" or "stat"
	Unit   string // Grafana's unit: "percentunit", "s", "short", "bool_yes_no"
	Exprs  []string
	Legend string
	// Thresholds: the value from which the panel turns red; 0: none.
	Red float64
}

// Panels are the dashboard's queries: the recorded ratios of the rules, one
// series per window, and the watch command's metrics.
func Panels(ws []Window) []Panel {
	var ratios []string
	for _, w := range windows(ws) {
		ratios = append(ratios, RecordName(w)+"{"+groupFilter+"}")
	}
	return []Panel{
		{Title: "False-timeout ratio at the timeout in force (recorded)", Type: "timeseries", Unit: "percentunit",
			Exprs: ratios, Legend: "{{group}} at {{timeout}}"},
		{Title: "Recommended timeout (watch)", Type: "stat", Unit: "s",
			Exprs: []string{WatchRecommended + "{" + groupFilter + "}"}, Legend: "{{group}}"},
		{Title: "Quantile with its confidence interval (watch)", Type: "timeseries", Unit: "s",
			Exprs:  []string{WatchQuantileLower + "{" + groupFilter + "}", WatchQuantile + "{" + groupFilter + "}", WatchQuantileUpper + "{" + groupFilter + "}"},
			Legend: "{{group}} p{{quantile}}"},
		{Title: "Share of calls the timeout cuts off (watch)", Type: "timeseries", Unit: "percentunit",
			Exprs: []string{WatchCutOff + "{" + groupFilter + "}"}, Legend: "{{group}} at {{timeout}}"},
		{Title: "Calls in flight during a hang (watch)", Type: "timeseries", Unit: "short",
			Exprs: []string{WatchInFlightHang + "{" + groupFilter + "}"}, Legend: "{{group}}"},
		{Title: "Pool exhausted during a hang (watch)", Type: "stat", Unit: "bool_yes_no",
			Exprs: []string{WatchPoolExhausted + "{" + groupFilter + "}"}, Legend: "{{group}}", Red: 1},
		{Title: "Since the last run of watch", Type: "stat", Unit: "s",
			Exprs: []string{"time() - " + WatchLastRun}, Legend: "last run"},
		{Title: "Last run of watch succeeded", Type: "stat", Unit: "bool_yes_no",
			Exprs: []string{WatchLastSuccess}, Legend: "success"},
	}
}

// Dashboard writes a Grafana dashboard (JSON model, schemaVersion 39) of
// the panels, with a Prometheus data source variable and a group variable.
func Dashboard(ws []Window, title string) ([]byte, error) {
	if title == "" {
		title = "tunetimeout"
	}
	ds := map[string]any{"type": "prometheus", "uid": datasourceRef}
	var panels []any
	x, y := 0, 0
	for i, p := range Panels(ws) {
		w := panelWidth
		if p.Type == "stat" {
			w = statWidth
		}
		if x+w > 24 {
			x, y = 0, y+height
		}
		var targets []any
		for j, e := range p.Exprs {
			targets = append(targets, map[string]any{
				"datasource": ds, "expr": e, "legendFormat": p.Legend, "refId": string(rune('A' + j)),
			})
		}
		steps := []any{map[string]any{"color": "green", "value": nil}}
		if p.Red != 0 {
			steps = append(steps, map[string]any{"color": "red", "value": p.Red})
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": p.Type, "title": p.Title, "datasource": ds,
			"gridPos": map[string]int{"x": x, "y": y, "w": w, "h": height},
			"targets": targets,
			"fieldConfig": map[string]any{
				"defaults":  map[string]any{"unit": p.Unit, "thresholds": map[string]any{"mode": "absolute", "steps": steps}},
				"overrides": []any{},
			},
			"options": map[string]any{},
		})
		x += w
	}
	d := map[string]any{
		"uid": dashboardUID, "title": title, "schemaVersion": dashboardSchema, "version": 1,
		"editable": true, "tags": []string{"tunetimeout"}, "timezone": "browser",
		"time":    map[string]string{"from": "now-24h", "to": "now"},
		"refresh": "1m",
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
			map[string]any{"name": "group", "type": "query", "datasource": ds, "label": "Group",
				"query":      map[string]any{"query": "label_values(" + WatchRecommended + ", group)", "refId": "group"},
				"definition": "label_values(" + WatchRecommended + ", group)",
				"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2,
				"current": map[string]any{"text": "All", "value": "$__all"}},
		}},
		"annotations": map[string]any{"list": []any{
			map[string]any{"name": "tunetimeout alerts", "datasource": ds, "enable": true, "iconColor": "red",
				"expr": `ALERTS{alertname=~"Tunetimeout.*", alertstate="firing"}`, "titleFormat": "{{alertname}}", "textFormat": "{{group}}"},
		}},
		"panels": panels,
	}
	return json.MarshalIndent(d, "", "  ")
}

// DashboardExprs are every PromQL expression of the dashboard, for
// validating them with Prometheus's parser.
func DashboardExprs(ws []Window) []string {
	out := []string{`ALERTS{alertname=~"Tunetimeout.*", alertstate="firing"}`}
	for _, p := range Panels(ws) {
		out = append(out, p.Exprs...)
	}
	return out
}
