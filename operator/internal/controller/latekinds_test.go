package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLateKindsWatchEachKindOnceServedAndRetryAFailedWatch(t *testing.T) {
	served := schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	failing := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Failing"}
	absent := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Absent"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(served, meta.RESTScopeNamespace)
	mapper.Add(failing, meta.RESTScopeNamespace)
	var watched []schema.GroupVersionKind
	l := &lateKinds{mapper: mapper, pending: []schema.GroupVersionKind{absent, served, failing}, watch: func(gvk schema.GroupVersionKind) error {
		if gvk == failing {
			return errors.New("cache not started")
		}
		watched = append(watched, gvk)
		return nil
	}}
	if left := l.check(context.Background()); left != 2 || !slices.Equal(l.pending, []schema.GroupVersionKind{absent, failing}) {
		t.Fatalf("pending %v (%d), want the kind not served and the failed watch", l.pending, left)
	}
	mapper.Add(absent, meta.RESTScopeNamespace)
	l.check(context.Background())
	if !slices.Equal(watched, []schema.GroupVersionKind{served, absent}) || !slices.Equal(l.pending, []schema.GroupVersionKind{failing}) {
		t.Fatalf("watched %v pending %v, want each served kind watched once and the failed one still pending", watched, l.pending)
	}
}
