package timeline

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzOf feeds Of any order of times, the pod's from a kubelet whose clock
// may be anywhere. What must never happen: a panic, a negative step, a
// step longer than the total, steps adding up to more than it, or more
// steps than there are.
func FuzzOf(f *testing.F) {
	f.Add(int64(0), int64(40), int64(100), int64(5300), int64(0), int64(1000), int64(2000), int64(5000), true)
	f.Add(int64(0), int64(40), int64(0), int64(5300), int64(-60000), int64(-60000), int64(-60000), int64(-60000), true)
	f.Add(int64(5000), int64(0), int64(-3000), int64(-1), int64(0), int64(9000), int64(-9000), int64(1), false)
	f.Fuzz(func(t *testing.T, signal, resumed, scaled, running, created, scheduled, started, ready int64, withPod bool) {
		ms := func(v int64) time.Time {
			if v == 0 {
				return time.Time{}
			}
			return t0.Add(time.Duration(v%(1<<40)) * time.Millisecond)
		}
		mt := func(v int64) metav1.Time { return metav1.NewTime(ms(v).Truncate(time.Second)) }
		in := Input{Source: "request", SignalAt: ms(signal), ResumedAt: ms(resumed), ScaledAt: ms(scaled), RunningAt: ms(running)}
		if withPod {
			in.Pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: mt(created)},
				Status: corev1.PodStatus{
					Conditions: []corev1.PodCondition{
						{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(scheduled)},
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(ready)},
					},
					ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(started)}}}},
				},
			}
		}
		tl := Of(in)
		var sum time.Duration
		for _, s := range tl.Steps {
			if s.Took < 0 || s.Took > tl.Total {
				t.Fatalf("step %v outside 0…%v (input %+v)", s, tl.Total, in)
			}
			sum += s.Took
		}
		if sum > tl.Total || len(tl.Steps) > 6 || tl.Total < 0 {
			t.Fatalf("steps %v add up to %v over the total %v", tl.Steps, sum, tl.Total)
		}
		_ = tl.Status()
	})
}
