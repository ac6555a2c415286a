package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AwakeWindow is one window of a schedule: "DAYS HH:MM-HH:MM" in the
// schedule's zone, such as "Mon-Fri 08:00-19:00". DAYS is a day or a range
// of days (a range may wrap the week: "Fri-Mon"), three letters or whole
// English names in any case; the end may be 24:00, and must come after the
// start (a window across midnight is two windows). The operator's parser
// (operator/internal/schedule) reads exactly what this rule lets through,
// and reports a start at or after its end as InvalidSetting.
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^ *(?i)(mon|tue|wed|thu|fri|sat|sun|monday|tuesday|wednesday|thursday|friday|saturday|sunday)(-(mon|tue|wed|thu|fri|sat|sun|monday|tuesday|wednesday|thursday|friday|saturday|sunday))? +([01]?[0-9]|2[0-3]):[0-5][0-9]-(([01]?[0-9]|2[0-3]):[0-5][0-9]|24:00) *$')",message="a window is DAYS HH:MM-HH:MM, such as Mon-Fri 08:00-19:00 or Sat 10:00-14:00: days Mon to Sun, hours 00:00 to 24:00"
type AwakeWindow string

// ScheduleSpec lists the hours a workload is awake by policy
// (docs/design/schedules-forecast.md#schedules): woken at each window's
// start and never paused for idleness
// inside one; outside them the usual rules apply, wake on request included.
type ScheduleSpec struct {
	// Awake lists the windows, such as "Mon-Fri 08:00-19:00". Windows that
	// overlap or touch count as one.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Awake []AwakeWindow `json:"awake"`

	// TimeZone is the IANA zone the windows are read in, such as
	// Europe/Berlin; DST changes keep the windows' wall-clock hours. An
	// unknown zone is reported (an InvalidSetting event and the Schedule
	// condition) and the schedule ignored.
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+\-/]+$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// Windows returns the windows as the strings the operator's parser reads.
func (s *ScheduleSpec) Windows() []string {
	out := make([]string, len(s.Awake))
	for i, w := range s.Awake {
		out[i] = string(w)
	}
	return out
}

// ScheduleStatus says where the schedule and the override annotations
// stand, as of the operator's last look
// (docs/design/schedules-forecast.md#schedules).
type ScheduleStatus struct {
	// Awake is true while the time is inside a window.
	// +optional
	Awake bool `json:"awake,omitempty"`
	// NextStart is when the next window begins; unset when none does in
	// the next two weeks.
	// +optional
	NextStart *metav1.Time `json:"nextStart,omitempty"`
	// End is when the window the time is in ends, else when the next one
	// does.
	// +optional
	End *metav1.Time `json:"end,omitempty"`
	// Override is the override annotation in force, keep-awake-until or
	// pause-until; empty for none.
	// +kubebuilder:validation:Enum=keep-awake-until;pause-until
	// +optional
	Override string `json:"override,omitempty"`
	// OverrideUntil is when that override ends.
	// +optional
	OverrideUntil *metav1.Time `json:"overrideUntil,omitempty"`
}
