package render

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Requests is what one replica of a workload asks for: the sum of its pod
// template's containers' requests.
type Requests struct {
	CPU, Memory resource.Quantity
	// Known is false when the target could not be read, or has no pod
	// template.
	Known bool
	// NoTemplate is true when the target was read but has no pod template
	// (spec.template) to read requests from.
	NoTemplate bool
}

// RequestsOf sums the requests of the containers of a target's pod
// template, spec.template, read from the object as unstructured: the same
// path in a Deployment, a StatefulSet and any other kind that has one (an
// Argo Rollout). Without one it is NoTemplate; with one that cannot be
// read, unknown.
func RequestsOf(obj map[string]any) Requests {
	m, ok, err := unstructured.NestedMap(obj, "spec", "template")
	if err != nil {
		return Requests{}
	}
	if !ok {
		return Requests{NoTemplate: true}
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return Requests{}
	}
	r := Requests{Known: true}
	for _, c := range t.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			r.CPU.Add(q)
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			r.Memory.Add(q)
		}
	}
	return r
}

// SavingsRow is what the pauses of one namespace's workloads saved.
type SavingsRow struct {
	Namespace string `json:"namespace"`
	Workloads int    `json:"workloads"`
	// Pauses counts ended pauses, and the pause under way if any.
	Pauses       int64   `json:"pauses"`
	ReplicaHours float64 `json:"replicaHours"`
	// CPUCoreHours and MemoryGiBHours are the requests freed: replica-hours
	// times each replica's requests, for the workloads whose requests were read.
	CPUCoreHours   float64 `json:"cpuCoreHours"`
	MemoryGiBHours float64 `json:"memoryGiBHours"`
	// Unknown counts the workloads with replica-hours whose target could
	// not be read; NoTemplate those whose target has no pod template.
	Unknown    int        `json:"workloadsWithUnknownRequests,omitempty"`
	NoTemplate int        `json:"workloadsWithoutPodTemplate,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
}

// SavingsOf sums, per namespace, what each workload's ended pauses
// (status.savings) and its pause under way saved, and the requests that
// freed. requests is keyed by namespace/name of the ManagedWorkload.
func SavingsOf(mws []napwakev1alpha1.ManagedWorkload, requests map[string]Requests, now time.Time) []SavingsRow {
	rows := map[string]*SavingsRow{}
	for i := range mws {
		mw := &mws[i]
		r := rows[mw.Namespace]
		if r == nil {
			r = &SavingsRow{Namespace: mw.Namespace}
			rows[mw.Namespace] = r
		}
		r.Workloads++
		seconds := 0.0
		if s := mw.Status.Savings; s != nil {
			seconds += float64(s.PausedReplicaSeconds)
			r.Pauses += s.Pauses
			if s.Since != nil {
				r.Since = earliest(r.Since, s.Since.Time)
			}
		}
		// A pause under way has saved its replicas since it began; the
		// operator adds it to status.savings when it ends.
		if p := mw.Status.Pause; p != nil && mw.Status.Phase == napwakev1alpha1.PhasePaused {
			if d := now.Sub(p.StartedAt.Time); d > 0 {
				seconds += float64(p.Replicas) * d.Seconds()
				r.Pauses++
				r.Since = earliest(r.Since, p.StartedAt.Time)
			}
		}
		hours := seconds / 3600
		r.ReplicaHours += hours
		req, ok := requests[mw.Namespace+"/"+mw.Name]
		if !ok || !req.Known {
			switch {
			case hours == 0:
			case req.NoTemplate:
				r.NoTemplate++
			default:
				r.Unknown++
			}
			continue
		}
		r.CPUCoreHours += hours * req.CPU.AsApproximateFloat64()
		r.MemoryGiBHours += hours * req.Memory.AsApproximateFloat64() / (1 << 30)
	}
	out := make([]SavingsRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b SavingsRow) int {
		if a.ReplicaHours != b.ReplicaHours {
			if a.ReplicaHours > b.ReplicaHours {
				return -1
			}
			return 1
		}
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	})
	return out
}

// earliest is the earlier of cur and t; a zero t (nothing known) leaves cur.
func earliest(cur *time.Time, t time.Time) *time.Time {
	if t.IsZero() {
		return cur
	}
	if cur == nil || t.Before(*cur) {
		return &t
	}
	return cur
}

// Savings renders `kubectl napwake savings`: a row per namespace, most
// saved first, and the total.
func Savings(w io.Writer, rows []SavingsRow, o Options) {
	if len(rows) == 0 {
		if o.NoHeaders {
			return
		}
		fmt.Fprintln(w, "No ManagedWorkloads found: nothing paused, nothing saved yet.")
		return
	}
	t := table{}
	t.add(txt("NAMESPACE"), txt("WORKLOADS"), txt("PAUSES"), txt("REPLICA-HOURS"), txt("CPU CORE-HOURS"), txt("MEMORY GiB-HOURS"), txt("SINCE"))
	var total SavingsRow
	unknown, noTemplate := 0, 0
	for _, r := range rows {
		t.add(txt(r.Namespace), txt(strconv.Itoa(r.Workloads)), txt(strconv.FormatInt(r.Pauses, 10)), txt(hoursCell(r.ReplicaHours)),
			txt(hoursCell(r.CPUCoreHours)), txt(hoursCell(r.MemoryGiBHours)), txt(sinceCell(o.Now, r.Since)))
		total.Workloads += r.Workloads
		total.Pauses += r.Pauses
		total.ReplicaHours += r.ReplicaHours
		total.CPUCoreHours += r.CPUCoreHours
		total.MemoryGiBHours += r.MemoryGiBHours
		total.Since = earliest(total.Since, deref(r.Since))
		unknown += r.Unknown
		noTemplate += r.NoTemplate
	}
	if len(rows) > 1 {
		t.add(txt("total"), txt(strconv.Itoa(total.Workloads)), txt(strconv.FormatInt(total.Pauses, 10)), txt(hoursCell(total.ReplicaHours)),
			txt(hoursCell(total.CPUCoreHours)), txt(hoursCell(total.MemoryGiBHours)), txt(sinceCell(o.Now, total.Since)))
	}
	if o.NoHeaders {
		t.rows = t.rows[1:]
	}
	t.write(w, o)
	if unknown > 0 && !o.NoHeaders {
		fmt.Fprintf(w, "CPU and memory leave out %s whose target could not be read.\n", plural(int64(unknown), "workload"))
	}
	if noTemplate > 0 && !o.NoHeaders {
		fmt.Fprintf(w, "CPU and memory leave out %s whose target has no pod template (spec.template) to read requests from.\n", plural(int64(noTemplate), "workload"))
	}
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func hoursCell(h float64) string { return strconv.FormatFloat(h, 'f', 1, 64) }

func sinceCell(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t) + " (" + since(now, t) + " ago)"
}
