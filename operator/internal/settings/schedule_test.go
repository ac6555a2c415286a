package settings

import (
	"reflect"
	"strings"
	"testing"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestSpecReadsAwakeHours(t *testing.T) {
	for _, tc := range []struct {
		name         string
		workload, ns map[string]string
		want         *napwakev1alpha1.ScheduleSpec
		warning      string // in the one warning, if any
	}{
		{
			name:     "awake-hours become spec.schedule in UTC, one window an item, spaces made single",
			workload: map[string]string{napwakev1alpha1.AnnotationAwakeHours: "Mon-Fri 08:00-19:00,  sat\t10:00-14:00"},
			want:     &napwakev1alpha1.ScheduleSpec{TimeZone: "UTC", Awake: []napwakev1alpha1.AwakeWindow{"Mon-Fri 08:00-19:00", "sat 10:00-14:00"}},
		},
		{
			name:     "awake-hours-zone names the zone, the namespace's too",
			workload: map[string]string{napwakev1alpha1.AnnotationAwakeHours: "Mon 08:00-09:00"},
			ns:       map[string]string{napwakev1alpha1.AnnotationAwakeHoursZone: "Europe/Berlin"},
			want:     &napwakev1alpha1.ScheduleSpec{TimeZone: "Europe/Berlin", Awake: []napwakev1alpha1.AwakeWindow{"Mon 08:00-09:00"}},
		},
		{
			name:     "unreadable awake-hours warn and fall back to the namespace's",
			workload: map[string]string{napwakev1alpha1.AnnotationAwakeHours: "Mon-Fri 25:00-19:00"},
			ns:       map[string]string{napwakev1alpha1.AnnotationAwakeHours: "Sun 10:00-11:00"},
			want:     &napwakev1alpha1.ScheduleSpec{TimeZone: "UTC", Awake: []napwakev1alpha1.AwakeWindow{"Sun 10:00-11:00"}},
			warning:  `workload annotation napwake.dev/awake-hours="Mon-Fri 25:00-19:00": window "Mon-Fri 25:00-19:00": start "25:00" is not a time of day`,
		},
		{
			name:     "awake-hours without hours warn and are ignored",
			workload: map[string]string{napwakev1alpha1.AnnotationAwakeHours: "Sun-Mon"},
			warning:  `no hours after "Sun-Mon"`,
		},
		{
			name: "an unknown zone warns and leaves the schedule out",
			workload: map[string]string{
				napwakev1alpha1.AnnotationAwakeHours: "Mon 08:00-09:00", napwakev1alpha1.AnnotationAwakeHoursZone: "Mars/Olympus",
			},
			warning: `napwake.dev/awake-hours-zone="Mars/Olympus": not an IANA time zone such as Europe/Berlin; awake-hours ignored`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, warnings := Spec(napwakev1alpha1.KindDeployment, "api", tc.workload, tc.ns, defaults)
			if !reflect.DeepEqual(spec.Schedule, tc.want) {
				t.Errorf("schedule %+v, want %+v", spec.Schedule, tc.want)
			}
			switch {
			case tc.warning == "" && len(warnings) > 0:
				t.Errorf("warnings %v, want none", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0].String(), tc.warning)):
				t.Errorf("warnings %v, want one saying %q", warnings, tc.warning)
			}
		})
	}
}
