package render

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// FuzzRenderObjectsFromTheCluster feeds the renderers what a cluster may hold:
// any condition reason and message, event message, activity source, phase,
// time zone and forecast state and last week of any bytes. What must never
// happen: a panic; a byte below 0x20 other than a newline in the output
// (escape sequences from an object would drive the user's terminal); or a
// message adding lines, which would break a row.
func FuzzRenderObjectsFromTheCluster(f *testing.F) {
	f.Add("ServedByOtherPods", "at its last pause: Service web is shared", "bad value", "request", "Paused", "UTC", []byte{0, 0, 3, 232})
	f.Add("\x1b[31mRed", "line one\nline two\r\n\ttabbed", "\x1b]0;title\x07", "\u202eevil", "Resuming", "Mars/Olympus", []byte{0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	f.Add("R", "m", "e", "request", "Running", "Europe/Berlin", append([]byte{1}, bytes.Repeat([]byte{0xff}, 215)...))
	f.Add("", "", "", "", "", "", []byte{})
	f.Fuzz(func(t *testing.T, reason, message, eventMsg, source, phase, zone string, raw []byte) {
		mw := napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"},
			Spec: napwakev1alpha1.ManagedWorkloadSpec{
				TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"},
				Forecast:  &napwakev1alpha1.ForecastSpec{TimeZone: zone},
			},
			Status: napwakev1alpha1.ManagedWorkloadStatus{
				Phase:              napwakev1alpha1.Phase(phase),
				LastActivitySource: source,
				Pause:              &napwakev1alpha1.PauseStatus{StartedAt: at(-time.Hour), Replicas: 2, Reason: napwakev1alpha1.PauseReason(reason)},
				Forecast:           &napwakev1alpha1.ForecastStatus{State: base64.StdEncoding.EncodeToString(raw), LastWeek: base64.StdEncoding.EncodeToString(raw[:min(len(raw), 42)])},
				Conditions: []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionFalse, Reason: reason,
					Message: napwakev1alpha1.CarriedOverPrefix + message}},
			},
		}
		events := []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "ManagedWorkload", Namespace: "ns", Name: "api"},
			Reason: napwakev1alpha1.EventInvalidSetting, Message: eventMsg, LastTimestamp: at(-time.Minute)}}

		lines := func(render func(*bytes.Buffer, *napwakev1alpha1.ManagedWorkload)) int {
			var b bytes.Buffer
			render(&b, &mw)
			out := b.String()
			for i := 0; i < len(out); i++ {
				if out[i] < 0x20 && out[i] != '\n' || out[i] == 0x7f {
					t.Fatalf("output holds control byte %#x at %d:\n%q", out[i], i, out)
				}
			}
			return strings.Count(out, "\n")
		}
		plainMW := mw
		status := func(b *bytes.Buffer, m *napwakev1alpha1.ManagedWorkload) {
			Status(b, []napwakev1alpha1.ManagedWorkload{*m}, events, "ns", Options{Now: now, Wide: true})
		}
		describe := func(b *bytes.Buffer, m *napwakev1alpha1.ManagedWorkload) { Describe(b, m, events, Options{Now: now}) }
		forecast := func(b *bytes.Buffer, m *napwakev1alpha1.ManagedWorkload) {
			Forecast(b, ForecastOf(m, now), Options{Now: now})
		}
		n := lines(status)
		nd := lines(describe)
		lines(forecast)

		// The same objects with tame text must print as many lines.
		mw.Status.Conditions[0].Message = napwakev1alpha1.CarriedOverPrefix + "x"
		mw.Status.Conditions[0].Reason = "R"
		mw.Status.Pause.Reason = "R"
		mw.Status.LastActivitySource = "s"
		events[0].Message = "m"
		if want := lines(status); n != want {
			t.Errorf("status printed %d lines, %d with tame text", n, want)
		}
		if want := lines(describe); nd != want {
			t.Errorf("describe printed %d lines, %d with tame text", nd, want)
		}
		mw = plainMW
	})
}
