package plan

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestOutcomeSaysTheConditionAndTheWarningsOfWhatRoutingFound(t *testing.T) {
	routed := Decision{Routes: []Want{{Service: "api", PortName: "http", Port: 80}}}
	neg := Decision{LeftOut: []LeftOut{{Service: "web", Reason: napwakev1alpha1.ReasonUnsupportedLoadBalancer, Why: "in GKE NEGs"}}}
	invalid := routed
	invalid.Invalid = []string{"napwake.dev/ignore-ports: bad", "other: bad"}
	cases := []struct {
		name     string
		d        Decision
		a        Acted
		reason   string
		status   metav1.ConditionStatus
		msg      string // in the condition's message
		warnings []string
	}{
		{"routed, with a probe", routed, Acted{Routed: true}, napwakev1alpha1.ReasonDoormanRouted, metav1.ConditionTrue, MessageRouted, nil},
		{"routed, asking", routed, Acted{Routed: true, Ask: true}, napwakev1alpha1.ReasonDoormanRouted, metav1.ConditionTrue, MessageRoutedAsk, nil},
		{"routed with no probe: said and warned", routed, Acted{Routed: true, NoProbe: true}, napwakev1alpha1.ReasonDoormanRouted, metav1.ConditionTrue,
			MessageNoReadinessProbe, []string{napwakev1alpha1.EventNoReadinessProbe}},
		{"no probe but nothing routed: not warned", Decision{}, Acted{NoProbe: true}, napwakev1alpha1.ReasonNoServices, metav1.ConditionFalse,
			"no Service selects", nil},
		{"the port range full", routed, Acted{PortsFailed: "every doorman port is taken"}, napwakev1alpha1.ReasonNoFreePort, metav1.ConditionFalse,
			"every doorman port is taken; no Service is routed", nil},
		{"a port cap", routed, Acted{PortsFailed: "32 ports for one workload", TooManyPorts: true}, napwakev1alpha1.ReasonTooManyPorts, metav1.ConditionFalse,
			"32 ports for one workload; no Service is routed", nil},
		{"a Service in NEGs", neg, Acted{}, napwakev1alpha1.ReasonUnsupportedLoadBalancer, metav1.ConditionFalse,
			"web (in GKE NEGs)", []string{napwakev1alpha1.EventUnsupportedLB}},
		{"invalid settings: one warning naming each", invalid, Acted{Routed: true}, napwakev1alpha1.ReasonDoormanRouted, metav1.ConditionTrue,
			MessageRouted, []string{napwakev1alpha1.EventInvalidSetting}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.d.Outcome(tc.a)
			c := o.Condition
			if c.Reason != tc.reason || c.Status != tc.status || !strings.Contains(c.Message, tc.msg) {
				t.Errorf("condition %+v, want %s %s with %q", c, tc.status, tc.reason, tc.msg)
			}
			var got []string
			for _, w := range o.Warnings {
				got = append(got, w.Reason)
				if w.Message == "" {
					t.Errorf("warning %s has no message", w.Reason)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.warnings, ",") {
				t.Errorf("warnings %v, want %v", got, tc.warnings)
			}
		})
	}
	if w := invalid.Outcome(Acted{Routed: true}).Warnings[0].Message; w != "napwake.dev/ignore-ports: bad; other: bad" {
		t.Errorf("invalid settings warning %q", w)
	}
}

func TestSharedNamesEachOtherRouteInOrder(t *testing.T) {
	o := Decision{Routes: []Want{{Service: "api"}}}.Outcome(Acted{Routed: true})
	if got := o.Shared(nil); got != o.Condition {
		t.Errorf("nothing shared changed the condition: %+v", got)
	}
	got := o.Shared(map[string]string{"web": "preview-1/front", "api": "preview-1/canary"}).Message
	want := MessageRouted + "; shared with other paused workloads, a request wakes each of them that wakes on request (one that asks wakes only on a click): " +
		"api through ManagedWorkload preview-1/canary's route, web through ManagedWorkload preview-1/front's route"
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
}

func TestRecheckComesSoonestForWhatChangesUnwatched(t *testing.T) {
	served := Decision{LeftOut: []LeftOut{{Service: "web", Reason: napwakev1alpha1.ReasonServedByOtherPods}}}
	cases := []struct {
		name                            string
		d                               Decision
		deaf, shared, forwarderNotReady bool
		want                            Recheck
	}{
		{"all in place", Decision{}, false, false, false, RecheckNone},
		{"doorman pods not listening yet", Decision{}, true, false, false, RecheckSoon},
		{"deaf pods outrank a shared Service", Decision{}, true, true, false, RecheckSoon},
		{"a shared Service", Decision{}, false, true, false, RecheckLater},
		{"a Service other pods serve", served, false, false, false, RecheckLater},
		{"a shared Service outranks the forwarder", Decision{}, false, true, true, RecheckLater},
		{"the NEG forwarder not Ready", Decision{}, false, false, true, RecheckSoon},
	}
	for _, tc := range cases {
		if got := tc.d.Recheck(tc.deaf, tc.shared, tc.forwarderNotReady); got != tc.want {
			t.Errorf("%s: Recheck = %d, want %d", tc.name, got, tc.want)
		}
	}
}
