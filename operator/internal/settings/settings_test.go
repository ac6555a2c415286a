package settings

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var defaults = Defaults{IdleAfter: 30 * time.Minute, Wake: "request"}

func TestSpec(t *testing.T) {
	for _, tc := range []struct {
		name         string
		workload, ns map[string]string
		defaults     Defaults
		check        func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec)
		warnings     []string // annotation keys warned about, in order
	}{
		{
			name: "with no annotations the operator's defaults apply",
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeRequest)
				eq(t, *s.Wake.Page, true)
				eq(t, s.Wake.MaxWait.Duration, 2*time.Minute)
				eq(t, s.IdleAfter.Duration, 30*time.Minute)
				eq(t, s.Activity == nil && s.Forecast == nil && s.Dependencies == nil, true)
			},
		},
		{
			name:     "the default wake flag ask applies when nothing says",
			defaults: Defaults{IdleAfter: time.Hour, Wake: "ask"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeAsk)
				eq(t, s.IdleAfter.Duration, time.Hour)
			},
		},
		{
			name:     "the workload's annotation wins over its namespace's",
			workload: map[string]string{napwakev1alpha1.AnnotationWake: "ask", napwakev1alpha1.AnnotationIdleAfter: "5m"},
			ns:       map[string]string{napwakev1alpha1.AnnotationWake: "request", napwakev1alpha1.AnnotationIdleAfter: "2h"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeAsk)
				eq(t, s.IdleAfter.Duration, 5*time.Minute)
			},
		},
		{
			name: "the namespace's annotation wins over the default",
			ns:   map[string]string{napwakev1alpha1.AnnotationWake: "ask", napwakev1alpha1.AnnotationWakePage: "false"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeAsk)
				eq(t, *s.Wake.Page, false)
			},
		},
		{
			name:     "an unreadable wake setting asks whatever the namespace says",
			workload: map[string]string{napwakev1alpha1.AnnotationWake: "Ask"},
			ns:       map[string]string{napwakev1alpha1.AnnotationWake: "request"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeAsk)
			},
			warnings: []string{napwakev1alpha1.AnnotationWake},
		},
		{
			name: "an unreadable wake setting on the namespace asks",
			ns:   map[string]string{napwakev1alpha1.AnnotationWake: "true"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.Mode, napwakev1alpha1.WakeAsk)
			},
			warnings: []string{napwakev1alpha1.AnnotationWake},
		},
		{
			name:     "an unreadable idle time falls back to the namespace's",
			workload: map[string]string{napwakev1alpha1.AnnotationIdleAfter: "ten minutes"},
			ns:       map[string]string{napwakev1alpha1.AnnotationIdleAfter: "2h"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.IdleAfter.Duration, 2*time.Hour)
			},
			warnings: []string{napwakev1alpha1.AnnotationIdleAfter},
		},
		{
			name:     "an idle time out of range falls back to the default",
			workload: map[string]string{napwakev1alpha1.AnnotationIdleAfter: "30s"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.IdleAfter.Duration, 30*time.Minute)
			},
			warnings: []string{napwakev1alpha1.AnnotationIdleAfter},
		},
		{
			name:     "a max wait over an hour falls back to two minutes",
			workload: map[string]string{napwakev1alpha1.AnnotationWakeMaxWait: "2h"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Wake.MaxWait.Duration, 2*time.Minute)
			},
			warnings: []string{napwakev1alpha1.AnnotationWakeMaxWait},
		},
		{
			name:     "a page setting other than true or false is ignored",
			workload: map[string]string{napwakev1alpha1.AnnotationWakePage: "no"},
			check:    func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) { t.Helper(); eq(t, *s.Wake.Page, true) },
			warnings: []string{napwakev1alpha1.AnnotationWakePage},
		},
		{
			name:     "dependencies name workloads in this or another namespace",
			workload: map[string]string{napwakev1alpha1.AnnotationDependsOn: "postgres, cache,shared/redis,postgres"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Dependencies, []napwakev1alpha1.DependencyRef{{Name: "postgres"}, {Name: "cache"}, {Namespace: "shared", Name: "redis"}})
			},
		},
		{
			name:     "a typo among the dependencies is left out with a warning, and the others still wake",
			workload: map[string]string{napwakev1alpha1.AnnotationDependsOn: "postgres,Cache_1, cache"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Dependencies, []napwakev1alpha1.DependencyRef{{Name: "postgres"}, {Name: "cache"}})
			},
			warnings: []string{napwakev1alpha1.AnnotationDependsOn},
		},
		{
			name:     "a value with no readable dependency falls back to the namespace's",
			workload: map[string]string{napwakev1alpha1.AnnotationDependsOn: "Cache_1"},
			ns:       map[string]string{napwakev1alpha1.AnnotationDependsOn: "db"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Dependencies, []napwakev1alpha1.DependencyRef{{Name: "db"}})
			},
			warnings: []string{napwakev1alpha1.AnnotationDependsOn},
		},
		{
			name:     "an activity query is read; the forecast's switches turn the forecast on in UTC, the namespace's too",
			workload: map[string]string{napwakev1alpha1.AnnotationActivityQuery: " up ", napwakev1alpha1.AnnotationAutoResume: "true"},
			ns:       map[string]string{napwakev1alpha1.AnnotationPauseEarly: "true"},
			check: func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) {
				t.Helper()
				eq(t, s.Activity.Prometheus.Query, "up")
				eq(t, *s.Forecast, napwakev1alpha1.ForecastSpec{AutoResume: true, PauseEarly: true, Mode: napwakev1alpha1.ForecastAct,
					TimeZone: "UTC", LearnFrom: napwakev1alpha1.LearnFromPeople})
			},
		},
		{
			name:     "an unreadable forecast switch warns and stays off",
			workload: map[string]string{napwakev1alpha1.AnnotationAutoResume: "yes"},
			check:    func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) { t.Helper(); eq(t, s.Forecast == nil, true) },
			warnings: []string{napwakev1alpha1.AnnotationAutoResume},
		},
		{
			name:     "the forecast's switches set false are no warning",
			workload: map[string]string{napwakev1alpha1.AnnotationAutoResume: "false", napwakev1alpha1.AnnotationPauseEarly: "false"},
			check:    func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) { t.Helper(); eq(t, s.Forecast == nil, true) },
		},
		{
			name:     "an empty activity query is unreadable",
			workload: map[string]string{napwakev1alpha1.AnnotationActivityQuery: "  "},
			check:    func(t *testing.T, s napwakev1alpha1.ManagedWorkloadSpec) { t.Helper(); eq(t, s.Activity == nil, true) },
			warnings: []string{napwakev1alpha1.AnnotationActivityQuery},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.defaults
			if d == (Defaults{}) {
				d = defaults
			}
			s, warnings := Spec(napwakev1alpha1.KindDeployment, "api", tc.workload, tc.ns, d)
			eq(t, s.TargetRef, napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"})
			tc.check(t, s)
			var keys []string
			for _, w := range warnings {
				keys = append(keys, w.Annotation)
				if !strings.Contains(w.String(), w.Annotation) {
					t.Errorf("warning %q does not name its annotation", w)
				}
			}
			eq(t, keys, tc.warnings)
		})
	}
}

func eq[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// FuzzSpec feeds arbitrary annotation values. What must never happen: a
// panic; a wake mode other than Request or Ask; a wake setting that is not
// exactly "request" or "ask" on the workload giving anything but Ask; a
// duration outside the CRD's limits; a dependency that is not a DNS label; an
// unreadable value that raises no warning.
func FuzzSpec(f *testing.F) {
	f.Add("request", "true", "2m", "30m", "postgres,ns/cache", "up", "ask")
	f.Add("Ask", "yes", "2h", "10s", "a,,b/", "", "true")
	f.Add("", "", "", "", "", "", "")
	f.Add("ask", "false", "1h0m1s", "168h1ns", "-a", "\x00", "request")
	f.Fuzz(func(t *testing.T, wake, page, maxWait, idle, deps, query, nsWake string) {
		w := map[string]string{
			napwakev1alpha1.AnnotationWake: wake, napwakev1alpha1.AnnotationWakePage: page,
			napwakev1alpha1.AnnotationWakeMaxWait: maxWait, napwakev1alpha1.AnnotationIdleAfter: idle,
			napwakev1alpha1.AnnotationDependsOn: deps, napwakev1alpha1.AnnotationActivityQuery: query,
		}
		s, warnings := Spec(napwakev1alpha1.KindStatefulSet, "db", w, map[string]string{napwakev1alpha1.AnnotationWake: nsWake}, defaults)
		if s.Wake.Mode != napwakev1alpha1.WakeRequest && s.Wake.Mode != napwakev1alpha1.WakeAsk {
			t.Fatalf("wake mode %q", s.Wake.Mode)
		}
		if wake != "request" && wake != "ask" && s.Wake.Mode != napwakev1alpha1.WakeAsk {
			t.Fatalf("unreadable wake %q gave %q", wake, s.Wake.Mode)
		}
		if d := s.IdleAfter.Duration; d < napwakev1alpha1.MinIdleAfter || d > napwakev1alpha1.MaxIdleAfter {
			t.Fatalf("idleAfter %s out of range", d)
		}
		if d := s.Wake.MaxWait.Duration; d <= 0 || d > napwakev1alpha1.MaxMaxWait {
			t.Fatalf("maxWait %s out of range", d)
		}
		for _, dep := range s.Dependencies {
			if dep.Name == "" || strings.Contains(dep.Name, "/") || !utf8.ValidString(dep.Name) {
				t.Fatalf("dependency %#v", dep)
			}
		}
		if s.Activity != nil && (s.Activity.Prometheus.Query == "" || len(s.Activity.Prometheus.Query) > maxQueryLen) {
			t.Fatalf("query %q", s.Activity.Prometheus.Query)
		}
		if (idle != "" && s.IdleAfter.Duration.String() != normal(idle)) && len(warnings) == 0 {
			t.Fatalf("idle-after %q ignored without a warning", idle)
		}
	})
}

// normal renders a Go duration the way time.Duration.String does, or "" if
// it is not one.
func normal(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil {
		return ""
	}
	return d.String()
}
