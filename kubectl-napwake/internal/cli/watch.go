package cli

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// watchStatus is `status -w`: it prints the status, then watches the
// ManagedWorkloads in scope and prints it again, after a blank line, each
// time one is added, changed or deleted, until ctx ends (Ctrl-C), which is
// success. Each print is read afresh (list and events), so it is the same
// as a plain status at that moment.
func (o *Options) watchStatus(ctx context.Context, out *outputFlags, sel labels.Selector) error {
	s, err := o.connect()
	if err != nil {
		return err
	}
	for printed := false; ; printed = true {
		scope, list, err := o.list(ctx, s, sel)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if printed {
			fmt.Fprintln(o.IO.Out)
		}
		if err := o.printStatus(ctx, out, s, scope, list); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := o.awaitChange(ctx, s, scope, sel, list.ResourceVersion); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// awaitChange returns once a ManagedWorkload in scope changes after
// resourceVersion rv (or the watch must start over, which also reprints),
// or ctx ends.
func (o *Options) awaitChange(ctx context.Context, s *session, scope []client.ListOption, sel labels.Selector, rv string) error {
	opts := append([]client.ListOption{}, scope...)
	if sel != nil && !sel.Empty() {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	for {
		w, err := s.c.Watch(ctx, &napwakev1alpha1.ManagedWorkloadList{},
			append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			req := s.read("watching ManagedWorkloads", "")
			if o.allNamespaces {
				req.namespace = ""
			}
			return s.explain(ctx, err, req)
		}
		changed, next, err := nextChange(ctx, w)
		w.Stop()
		if err != nil || changed || ctx.Err() != nil {
			return err
		}
		if next != "" {
			rv = next
		}
	}
}

// nextChange reads w until a ManagedWorkload is added, modified or
// deleted, or the watch's resourceVersion is too old (changed: list and
// print afresh); the watch ends (watch again, from next when a bookmark
// said so); or ctx ends.
func nextChange(ctx context.Context, w watch.Interface) (changed bool, next string, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, "", nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, next, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				return true, "", nil
			case watch.Bookmark:
				if m, ok := ev.Object.(metav1.Object); ok {
					next = m.GetResourceVersion()
				}
			case watch.Error:
				if st, ok := apierrors.FromObject(ev.Object).(apierrors.APIStatus); ok && st.Status().Code == http.StatusGone {
					return true, "", nil // too old: list afresh
				}
				return false, "", userErrorf("watching ManagedWorkloads: %v", apierrors.FromObject(ev.Object))
			}
		}
	}
}
