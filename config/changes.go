package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Changes describes, one line each, how next differs from prev, in a
// stable order: what a daemon reloading on SIGHUP tells the person. Nil
// when nothing that affects a run changed (Path alone does not count).
func Changes(prev, next *Config) []string {
	var out []string
	if !reflect.DeepEqual(prev.Defaults, next.Defaults) {
		out = append(out, "defaults changed")
	}
	for _, name := range unionKeys(prev.Agents, next.Agents) {
		a, inPrev := prev.Agents[name]
		b, inNext := next.Agents[name]
		switch {
		case !inPrev:
			out = append(out, fmt.Sprintf("agent %s added", name))
		case !inNext:
			out = append(out, fmt.Sprintf("agent %s removed", name))
		case !reflect.DeepEqual(a, b):
			out = append(out, fmt.Sprintf("agent %s changed", name))
		}
	}
	for _, name := range unionKeys(prev.Prompts, next.Prompts) {
		a, inPrev := prev.Prompts[name]
		b, inNext := next.Prompts[name]
		switch {
		case !inPrev:
			out = append(out, fmt.Sprintf("prompt %s added", name))
		case !inNext:
			out = append(out, fmt.Sprintf("prompt %s removed", name))
		case a != b:
			out = append(out, fmt.Sprintf("prompt %s changed", name))
		}
	}
	if prev.Roundtable != next.Roundtable {
		out = append(out, "roundtable_prompts changed")
	}
	if !reflect.DeepEqual(prev.Pricing, next.Pricing) {
		out = append(out, "pricing changed")
	}
	if !reflect.DeepEqual(prev.Limits, next.Limits) {
		out = append(out, "limits changed")
	}
	if !reflect.DeepEqual(prev.Notify, next.Notify) {
		out = append(out, "notify changed")
	}
	if !reflect.DeepEqual(prev.People, next.People) {
		out = append(out, "people changed")
	}
	if !slices.Equal(prev.Serve.AllowedHosts, next.Serve.AllowedHosts) {
		out = append(out, "serve.allowed_hosts changed")
	}
	if prev.BudgetUSD != next.BudgetUSD {
		out = append(out, fmt.Sprintf("budget_usd %g → %g", prev.BudgetUSD, next.BudgetUSD))
	}
	return out
}

// unionKeys returns the keys of a and b, sorted, each once.
func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}
