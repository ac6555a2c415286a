package timeline

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var t0 = time.Date(2026, 10, 27, 14, 30, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// pod is a pod of the wake as the kubelet leaves it: created at created,
// scheduled, its container started and Ready at the times given (whole
// seconds, as the API stores them), with a readiness probe.
func pod(created, scheduled, started, ready time.Duration) *corev1.Pod {
	mt := func(d time.Duration) metav1.Time { return metav1.NewTime(at(d).Truncate(time.Second)) }
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-7d9f-x2k", CreationTimestamp: mt(created)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", ReadinessProbe: &corev1.Probe{InitialDelaySeconds: 2}}}},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(scheduled)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(ready)},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(started)}}}},
		},
	}
	return p
}

// wake is a wake woken by a request at t0, Resuming written 40 ms later,
// the scale 60 ms after that, and Running at 5.3 s.
func wake(p *corev1.Pod) Input {
	return Input{Source: "request", SignalAt: t0, ResumedAt: at(40 * time.Millisecond), ScaledAt: at(100 * time.Millisecond),
		RunningAt: at(5300 * time.Millisecond), Pod: p}
}

type step = Step

const ms = time.Millisecond

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          Input
		want        []step
		slowest     napwakev1alpha1.WakeStepName
		advice      string // a part of the advice
		note        string // a part of the notes; "" for none
		total       time.Duration
		noTimelines bool
	}{{
		name:    "a request's wake is told step by step, the readiness probe slowest",
		in:      wake(pod(100*ms, 1*time.Second, 2*time.Second, 5*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 900 * ms}, {"started", time.Second}, {"ready", 3 * time.Second}, {"running", 300 * ms}},
		slowest: "ready", advice: "your readiness probe's first success came 3.0 s after the container started: lower `initialDelaySeconds` or `periodSeconds` (app: initialDelaySeconds 2, periodSeconds 10)",
		total: 5300 * ms,
	}, {
		// The doorman stamps by the API server's clock read from a Date
		// header, up to a second late; resumedAt is cut to the second. The
		// local cluster's wakes read so (signal 04:28:07, resumedAt
		// 04:28:06), and lost their woken and scheduled steps.
		name: "a signal a second after resumedAt starts the wake at resumedAt",
		in: Input{Source: "request", SignalAt: at(time.Second), ResumedAt: at(0), ScaledAt: at(300 * ms),
			RunningAt: at(4300 * ms), Pod: pod(0, 0, 2*time.Second, 4*time.Second)},
		want:    []step{{"woken", 0}, {"scaled", 300 * ms}, {"scheduled", 0}, {"started", 1700 * ms}, {"ready", 2 * time.Second}, {"running", 300 * ms}},
		slowest: "ready", advice: "readiness probe", total: 4300 * ms,
	}, {
		name:    "a slow image pull is the slowest step and the advice is about the image",
		in:      wake(pod(0, 1*time.Second, 4*time.Second, 5*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 900 * ms}, {"started", 3 * time.Second}, {"ready", time.Second}, {"running", 300 * ms}},
		slowest: "started", advice: "image pull and container start took 3.0 s", total: 5300 * ms,
	}, {
		name:    "a pod waiting for a node is told to look at FailedScheduling",
		in:      wake(pod(0, 4*time.Second, 4*time.Second, 5*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 3900 * ms}, {"started", 0}, {"ready", time.Second}, {"running", 300 * ms}},
		slowest: "scheduled", advice: "FailedScheduling", total: 5300 * ms,
	}, {
		name:    "a pod time rounded down to the second before the scale counts as no time, never negative",
		in:      wake(pod(0, 0, 2*time.Second, 5*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 0}, {"started", 1900 * ms}, {"ready", 3 * time.Second}, {"running", 300 * ms}},
		slowest: "ready", advice: "readiness probe", total: 5300 * ms,
	}, {
		name:    "no pod seen leaves the pod's steps out and says so; running runs from the scale",
		in:      wake(nil),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"running", 5200 * ms}},
		slowest: "running", advice: "the operator saw the Ready pod 5.2 s after", note: "scheduled: no Ready pod of this wake was seen", total: 5300 * ms,
	}, {
		name:    "a pod older than the wake (a pause called off) says nothing of it",
		in:      wake(pod(-time.Minute, -time.Minute, -time.Minute, -time.Minute)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"running", 5200 * ms}},
		slowest: "running", note: "older than the wake", total: 5300 * ms,
	}, {
		name: "an operator restarted mid-wake leaves the scale out and scheduled runs from Resuming",
		in: func() Input {
			in := wake(pod(0, 1*time.Second, 2*time.Second, 3*time.Second))
			in.ScaledAt = time.Time{}
			return in
		}(),
		want:    []step{{"woken", 40 * ms}, {"scheduled", 960 * ms}, {"started", time.Second}, {"ready", time.Second}, {"running", 2300 * ms}},
		slowest: "running", note: "scaled: the operator wrote no scale it remembers", total: 5300 * ms,
	}, {
		name:    "a pod time seconds before the scale (a skewed kubelet clock) is left out, not negative",
		in:      wake(pod(0, -3*time.Second, 2*time.Second, 3*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"started", 1900 * ms}, {"ready", time.Second}, {"running", 2300 * ms}},
		slowest: "running", note: "scheduled: its time is out of order", total: 5300 * ms,
	}, {
		name:    "a pod time after Running is out of order too",
		in:      wake(pod(0, 1*time.Second, 2*time.Second, 9*time.Second)),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 900 * ms}, {"started", time.Second}, {"running", 3300 * ms}},
		slowest: "running", note: "ready: its time is out of order", total: 5300 * ms,
	}, {
		name: "no signal time starts the wake at Resuming and leaves woken out",
		in: func() Input {
			in := wake(nil)
			in.SignalAt = time.Time{}
			return in
		}(),
		want:    []step{{"scaled", 60 * ms}, {"running", 5200 * ms}},
		slowest: "running", note: "woken: the waking signal's time is not known", total: 5260 * ms,
	}, {
		name: "a container not yet running leaves started out",
		in: func() Input {
			p := pod(0, 1*time.Second, 2*time.Second, 3*time.Second)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{}
			return wake(p)
		}(),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 900 * ms}, {"ready", 2 * time.Second}, {"running", 2300 * ms}},
		slowest: "running", note: "started: the pod's containers have no start time", total: 5300 * ms,
	}, {
		name: "a Ready pod without a readiness probe is told the app's start-up takes that long",
		in: func() Input {
			p := pod(0, 0, 1*time.Second, 5*time.Second)
			p.Spec.Containers[0].ReadinessProbe = nil
			return wake(p)
		}(),
		want:    []step{{"woken", 40 * ms}, {"scaled", 60 * ms}, {"scheduled", 0}, {"started", 900 * ms}, {"ready", 4 * time.Second}, {"running", 300 * ms}},
		slowest: "ready", advice: "the app's start-up", total: 5300 * ms,
	}, {
		name: "Running before the start tells nothing, without a panic",
		in: func() Input {
			in := wake(nil)
			in.RunningAt = at(-time.Hour)
			return in
		}(),
		note: "the wake's start is not known", noTimelines: true,
	}, {
		name:        "an empty input tells nothing",
		in:          Input{},
		note:        "the wake's start is not known",
		noTimelines: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tl := Of(tc.in)
			if len(tl.Steps) != len(tc.want) {
				t.Fatalf("steps %v, want %v (notes %q)", tl.Steps, tc.want, tl.Notes)
			}
			var sum time.Duration
			for i, s := range tl.Steps {
				if s != tc.want[i] {
					t.Errorf("step %d = %v, want %v", i, s, tc.want[i])
				}
				if s.Took < 0 || s.Took > tl.Total {
					t.Errorf("step %v is not within the total %v", s, tl.Total)
				}
				sum += s.Took
			}
			if sum > tl.Total {
				t.Errorf("steps add up to %v, more than the total %v", sum, tl.Total)
			}
			if tl.Total != tc.total {
				t.Errorf("total %v, want %v", tl.Total, tc.total)
			}
			if tc.noTimelines {
				if tl.Slowest != -1 || tl.Advice != "" {
					t.Errorf("slowest %d advice %q, want none", tl.Slowest, tl.Advice)
				}
			} else if tl.Steps[tl.Slowest].Name != tc.slowest {
				t.Errorf("slowest %s, want %s", tl.Steps[tl.Slowest].Name, tc.slowest)
			}
			if !strings.Contains(tl.Advice, tc.advice) {
				t.Errorf("advice %q, want it to contain %q", tl.Advice, tc.advice)
			}
			notes := strings.Join(tl.Notes, "; ")
			if (tc.note == "") != (notes == "") || !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
		})
	}
}

func TestStatusRecordsTheTimelineInMilliseconds(t *testing.T) {
	st := Of(wake(pod(100*ms, 1*time.Second, 2*time.Second, 5*time.Second))).Status()
	if st.Source != "request" || !st.StartedAt.Time.Equal(t0) || st.TotalMilliseconds != 5300 || st.Slowest != napwakev1alpha1.WakeStepReady {
		t.Errorf("status %+v", st)
	}
	if len(st.Steps) != 6 || st.Steps[4] != (napwakev1alpha1.WakeStep{Name: napwakev1alpha1.WakeStepReady, Milliseconds: 3000}) {
		t.Errorf("steps %+v", st.Steps)
	}
	if st.Pod != "api-7d9f-x2k" {
		t.Errorf("pod %q, want the wake's", st.Pod)
	}
	if st.Note != "" || !strings.Contains(st.Advice, "readiness probe") {
		t.Errorf("note %q advice %q", st.Note, st.Advice)
	}
}

func TestAPodOlderThanTheWakeIsNotNamed(t *testing.T) {
	if st := Of(wake(pod(-time.Minute, -time.Minute, -time.Minute, -time.Minute))).Status(); st.Pod != "" {
		t.Errorf("pod %q named, want none: its times are not the wake's", st.Pod)
	}
}

func TestClipKeepsWithinTheAPIsBound(t *testing.T) {
	s := clip(strings.Repeat("é", 400))
	if len(s) > 512 || !strings.HasSuffix(s, "...") {
		t.Errorf("clip gave %d bytes", len(s))
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *napwakev1alpha1.LastWakeStatus
		want string
	}{
		{"no wake says nothing", nil, ""},
		{"a wake under way says nothing", &napwakev1alpha1.LastWakeStatus{Source: "request"}, ""},
		{"a done wake gives its total and slowest step", Of(wake(pod(100*ms, 1*time.Second, 2*time.Second, 5*time.Second))).Status(),
			"5.3 s after the request signal; slowest: ready, 3.0 s"},
		{"a wake with no step known gives its total", &napwakev1alpha1.LastWakeStatus{Source: "scaled", TotalMilliseconds: 1200}, "1.2 s after the scaled signal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(tc.w); got != tc.want {
				t.Errorf("Summary = %q, want %q", got, tc.want)
			}
		})
	}
}
