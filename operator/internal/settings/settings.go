// Package settings turns the napwake.dev/* annotations of a labelled workload
// and its namespace into a ManagedWorkloadSpec
// (docs/design/api.md#settings-from-annotations). It is
// pure: no client, no clock.
//
// Precedence: the workload's annotation, else its namespace's, else the
// operator's defaults. An unreadable value never weakens safety: an
// unreadable wake setting asks (whatever the namespace says, so a typo never
// lets robots wake it); any other unreadable value is skipped, so the next
// source (the namespace's value, then the default) applies. Each unreadable
// value comes back as a Warning, for an InvalidSetting event.
package settings

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/schedule"
)

// Defaults are the operator's own settings (flags, Helm defaults.*).
type Defaults struct {
	// IdleAfter is --default-idle-after.
	IdleAfter time.Duration
	// Wake is --default-wake: "request" or "ask".
	Wake string
}

// Warning is one unreadable annotation.
type Warning struct {
	// Source is "workload" or "namespace".
	Source string
	// Annotation is the annotation's key.
	Annotation string
	// Value is what it said.
	Value string
	// Problem says why it is unreadable and what applies instead.
	Problem string
}

// String renders the warning as an event message.
func (w Warning) String() string {
	return fmt.Sprintf("%s annotation %s=%q: %s", w.Source, w.Annotation, w.Value, w.Problem)
}

// Limits the CRD enforces; a value outside them is unreadable here rather
// than refused by the API server later.
const (
	maxQueryLen   = 4096
	maxDependents = 64
)

// Spec works out the spec of the ManagedWorkload for a workload of kind and
// name from its own annotations and its namespace's. The result's TargetRef
// is set; every other field is set explicitly, so comparing two results
// tells whether anything changed.
func Spec(kind napwakev1alpha1.TargetKind, name string, workload, namespace map[string]string, d Defaults) (napwakev1alpha1.ManagedWorkloadSpec, []Warning) {
	p := parser{layers: []layer{{"workload", workload}, {"namespace", namespace}}}
	spec := napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: kind, Name: name}}

	spec.Wake.Mode = p.wake(d.Wake)
	page := p.boolean(napwakev1alpha1.AnnotationWakePage, true)
	spec.Wake.Page = &page
	spec.Wake.MaxWait = &metav1.Duration{Duration: p.duration(napwakev1alpha1.AnnotationWakeMaxWait, napwakev1alpha1.DefaultMaxWait, time.Nanosecond, napwakev1alpha1.MaxMaxWait)}
	spec.IdleAfter = &metav1.Duration{Duration: p.duration(napwakev1alpha1.AnnotationIdleAfter, d.IdleAfter, napwakev1alpha1.MinIdleAfter, napwakev1alpha1.MaxIdleAfter)}
	if q := p.query(); q != "" {
		spec.Activity = &napwakev1alpha1.ActivitySpec{Prometheus: &napwakev1alpha1.PrometheusActivity{Query: q}}
	}
	spec.Dependencies = p.dependencies()
	spec.Schedule = p.schedule()
	autoResume := p.boolean(napwakev1alpha1.AnnotationAutoResume, false)
	pauseEarly := p.boolean(napwakev1alpha1.AnnotationPauseEarly, false)
	if autoResume || pauseEarly {
		spec.Forecast = &napwakev1alpha1.ForecastSpec{
			AutoResume: autoResume, PauseEarly: pauseEarly, Mode: napwakev1alpha1.ForecastAct,
			TimeZone: "UTC", LearnFrom: napwakev1alpha1.LearnFromPeople,
		}
		if spec.Schedule != nil && spec.Schedule.TimeZone != "" {
			spec.Forecast.TimeZone = spec.Schedule.TimeZone // the week the workload's people keep
		}
	}
	return spec, p.warnings
}

type layer struct {
	source string
	values map[string]string
}

type parser struct {
	layers   []layer
	warnings []Warning
}

func (p *parser) warn(l layer, key, problem string) {
	p.warnings = append(p.warnings, Warning{Source: l.source, Annotation: key, Value: l.values[key], Problem: problem})
}

// first calls read on each layer's value of key in turn until one accepts
// it (read keeps what it accepted); read returns a problem for a value it
// refuses, and each refusal is a warning.
func (p *parser) first(key string, read func(string) string) {
	for _, l := range p.layers {
		v, ok := l.values[key]
		if !ok {
			continue
		}
		if problem := read(v); problem != "" {
			p.warn(l, key, problem)
			continue
		}
		return
	}
}

func (p *parser) wake(def string) napwakev1alpha1.WakeMode {
	mode := napwakev1alpha1.WakeRequest
	if def == napwakev1alpha1.WakeValueAsk {
		mode = napwakev1alpha1.WakeAsk
	}
	for _, l := range p.layers {
		v, ok := l.values[napwakev1alpha1.AnnotationWake]
		if !ok {
			continue
		}
		switch v {
		case napwakev1alpha1.WakeValueRequest:
			return napwakev1alpha1.WakeRequest
		case napwakev1alpha1.WakeValueAsk:
			return napwakev1alpha1.WakeAsk
		}
		p.warn(l, napwakev1alpha1.AnnotationWake, `want exactly "request" or "ask"; it asks`)
		return napwakev1alpha1.WakeAsk
	}
	return mode
}

func (p *parser) boolean(key string, def bool) bool {
	out := def
	p.first(key, func(v string) string {
		switch v {
		case "true":
			out = true
		case "false":
			out = false
		default:
			return `want "true" or "false"; ignored`
		}
		return ""
	})
	return out
}

func (p *parser) duration(key string, def, lo, hi time.Duration) time.Duration {
	out := def
	p.first(key, func(v string) string {
		d, err := time.ParseDuration(v)
		if err != nil {
			return "not a Go duration such as 30m; ignored"
		}
		if d < lo || d > hi {
			return fmt.Sprintf("want %s to %s; ignored", lo, hi)
		}
		out = d
		return ""
	})
	return out
}

func (p *parser) query() string {
	var out string
	p.first(napwakev1alpha1.AnnotationActivityQuery, func(v string) string {
		v = strings.TrimSpace(v)
		if v == "" || len(v) > maxQueryLen {
			return fmt.Sprintf("want a PromQL query of 1 to %d bytes; ignored", maxQueryLen)
		}
		out = v
		return ""
	})
	return out
}

// dependencies reads "postgres,cache" or "ns/name" entries. An entry that
// is not a name is left out and said so in a warning, and the others are
// kept: a typo never stops the rest of the environment waking
// (docs/design/dependencies.md#unreadable-entries).
// A value with no readable entry at all falls back to the next layer, as
// any unreadable value does; a value with no entries says "none".
func (p *parser) dependencies() []napwakev1alpha1.DependencyRef {
	for _, l := range p.layers {
		v, ok := l.values[napwakev1alpha1.AnnotationDependsOn]
		if !ok {
			continue
		}
		refs, bad := readDependsOn(v)
		switch {
		case len(refs) > maxDependents:
			p.warn(l, napwakev1alpha1.AnnotationDependsOn, fmt.Sprintf("more than %d dependencies; ignored", maxDependents))
			continue
		case len(bad) > 0 && len(refs) == 0:
			p.warn(l, napwakev1alpha1.AnnotationDependsOn, strings.Join(bad, "; ")+"; ignored")
			continue
		case len(bad) > 0:
			p.warn(l, napwakev1alpha1.AnnotationDependsOn, strings.Join(bad, "; ")+"; left out, the others kept")
		}
		return refs
	}
	return nil
}

// readDependsOn splits a depends-on value into its readable entries, each
// once, and a problem for each entry that is not one.
func readDependsOn(v string) (refs []napwakev1alpha1.DependencyRef, bad []string) {
	seen := map[napwakev1alpha1.DependencyRef]bool{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		ref := napwakev1alpha1.DependencyRef{Name: entry}
		if ns, name, ok := strings.Cut(entry, "/"); ok {
			ref = napwakev1alpha1.DependencyRef{Namespace: ns, Name: name}
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				bad = append(bad, fmt.Sprintf("namespace %q: %s", ns, errs[0]))
				continue
			}
		}
		if errs := validation.IsDNS1123Label(ref.Name); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("name %q: %s", ref.Name, errs[0]))
			continue
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	return refs, bad
}

// schedule reads napwake.dev/awake-hours ("Mon-Fri 08:00-19:00, Sat
// 10:00-14:00") in the zone of napwake.dev/awake-hours-zone (UTC when
// absent), each from the workload, else its namespace. An unreadable zone
// leaves the schedule out: windows read in the wrong zone would wake it at
// the wrong hours. Unreadable hours fall back to the next layer, as any
// unreadable value does. The windows are written one per item with single
// spaces, as the API's rule on spec.schedule.awake wants them.
func (p *parser) schedule() *napwakev1alpha1.ScheduleSpec {
	zone, zoneOK := "UTC", true
	p.first(napwakev1alpha1.AnnotationAwakeHoursZone, func(v string) string {
		if _, err := schedule.LoadZone(v); err != nil || v == "" {
			zoneOK = false
			return "not an IANA time zone such as Europe/Berlin; awake-hours ignored"
		}
		zone, zoneOK = v, true
		return ""
	})
	var out *napwakev1alpha1.ScheduleSpec
	p.first(napwakev1alpha1.AnnotationAwakeHours, func(v string) string {
		if !zoneOK {
			return ""
		}
		if _, err := schedule.ParseList(v, zone); err != nil {
			return err.Error() + "; ignored"
		}
		out = &napwakev1alpha1.ScheduleSpec{TimeZone: zone}
		for _, w := range strings.Split(v, ",") {
			out.Awake = append(out.Awake, napwakev1alpha1.AwakeWindow(strings.Join(strings.Fields(w), " ")))
		}
		return ""
	})
	return out
}
