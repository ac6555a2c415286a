package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// action is wake or pause: the annotation that asks for it and the phase
// that means it is done.
type action struct {
	verb       string
	annotation string
	want       napwakev1alpha1.Phase
	short      string
	// until is the override --until writes instead of annotation, and
	// keep (awake or paused) is what it does.
	until, keep string
	// clears is the override the other verb writes, removed by this one
	// (by pause always: keep-awake-until would hold off any pause).
	clears string
	// untilHow says whether --until's annotation replaces annotation
	// ("instead") or comes with it ("as well"); note says what becomes of
	// the other override. Both for --help.
	untilHow, note string
	// untilValue is --until as given; nil without it.
	untilValue *string
}

var (
	wakeAction = action{
		verb: "wake", annotation: napwakev1alpha1.AnnotationWakeRequested, want: napwakev1alpha1.PhaseRunning,
		short: "Wake a paused workload now, whatever its wake mode says",
		until: napwakev1alpha1.AnnotationKeepAwakeUntil, keep: "awake", clears: napwakev1alpha1.AnnotationPauseUntil, untilHow: "instead",
		note: "--until also removes\n" + napwakev1alpha1.AnnotationPauseUntil + "; without it, this wake is the one thing pause-until lets through.",
	}
	pauseAction = action{
		verb: "pause", annotation: napwakev1alpha1.AnnotationPauseRequested, want: napwakev1alpha1.PhasePaused,
		short: "Pause a workload now, without waiting for it to go idle",
		until: napwakev1alpha1.AnnotationPauseUntil, keep: "paused", clears: napwakev1alpha1.AnnotationKeepAwakeUntil, untilHow: "as well",
		note: "Either way it\nremoves " + napwakev1alpha1.AnnotationKeepAwakeUntil + ", which would hold off any pause.",
	}
)

// defaultWaitTimeout is how long --wait follows the phase unless told: long
// enough for a slow image pull, short enough for a CI job.
const defaultWaitTimeout = 5 * time.Minute

func newActCommand(o *Options, a action) *cobra.Command {
	var wait bool
	var timeout time.Duration
	var until, selector string
	cmd := &cobra.Command{
		Use:   a.verb + " NAME...",
		Short: a.short,
		Long: fmt.Sprintf(`%s.

Sets the annotation %s on each ManagedWorkload named (NAME,
managedworkload/NAME or mw/NAME), or picked by -l (with -A in every
namespace), to the current time (RFC 3339, UTC); the operator acts on it.
With --until, sets %s to the time given %s, keeping it %s until then
(docs/schedules.md). %s
With --wait, follows the phase of each until it is %s or --timeout passes,
and says how long it took. Every workload is tried even when one fails; the
exit code is 1 if any did.`, a.short, a.annotation, a.until, a.untilHow, a.keep, a.note, a.want),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be more than 0s, got %s", timeout)
			}
			act := a
			if cmd.Flags().Changed("until") {
				if err := checkUntil(until); err != nil {
					return err
				}
				act.untilValue = &until
			}
			t, err := parseTargets(cmd, args, selector, o.allNamespaces)
			if err != nil {
				return err
			}
			return o.runAct(cmd.Context(), t, act, wait, timeout)
		},
	}
	cmd.Flags().StringVar(&until, "until", "", fmt.Sprintf(untilHelp, a.keep, a.until))
	cmd.Flags().BoolVar(&wait, "wait", false, fmt.Sprintf("Wait until each workload is %s.", a.want))
	cmd.Flags().DurationVar(&timeout, "timeout", defaultWaitTimeout, "How long --wait waits for each workload before giving up (non-zero exit).")
	addSelectorFlag(cmd, &selector)
	return cmd
}

// runAct asks every workload t names for a, then, with wait, follows each
// one asked.
func (o *Options) runAct(ctx context.Context, t targets, a action, wait bool, timeout time.Duration) error {
	s, err := o.connect()
	if err != nil {
		return err
	}
	keys, err := s.keys(ctx, t)
	if err != nil {
		return err
	}
	asked := map[client.ObjectKey]*napwakev1alpha1.ManagedWorkload{}
	err = o.eachKey(a.verb, keys, func(k client.ObjectKey) error {
		mw, err := o.actOn(ctx, s, k, a)
		if err == nil {
			asked[k] = mw
		}
		return err
	})
	if !wait {
		return err
	}
	var waitKeys []client.ObjectKey
	for _, k := range keys {
		if asked[k] != nil {
			waitKeys = append(waitKeys, k)
		}
	}
	if len(waitKeys) == 0 {
		return err
	}
	werr := o.eachKey(a.verb+" --wait", waitKeys, func(k client.ObjectKey) error {
		return o.waitForPhase(ctx, s, asked[k], a.want, timeout)
	})
	if err != nil {
		return err
	}
	return werr
}

// actOn sets a's annotation on the ManagedWorkload key and says so.
func (o *Options) actOn(ctx context.Context, s *session, key client.ObjectKey, a action) (*napwakev1alpha1.ManagedWorkload, error) {
	mw, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	name := mw.Name
	now, skew := o.stamp(s)
	annotationKey, value := a.annotation, now.Format(time.RFC3339)
	if a.untilValue != nil {
		loc, _ := scheduleZone(mw)
		t, err := parseUntil(*a.untilValue, now, loc)
		if err != nil {
			// Found after asking the cluster (its clock): exit code 1.
			return nil, userErrorf("%v", err)
		}
		annotationKey, value = a.until, t.Format(time.RFC3339)
	}
	annotations := map[string]any{annotationKey: value}
	if a.verb == pauseAction.verb || a.untilValue != nil {
		annotations[a.clears] = nil // a merge patch's null removes it
	}
	if a.verb == pauseAction.verb {
		// pause-until alone does not pause a workload a wake-requested
		// woke since its last pause (that wake is exempt): ask for the
		// pause now too.
		annotations[a.annotation] = now.Format(time.RFC3339)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	if err := s.c.Patch(ctx, mw, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, s.explain(ctx, err, request{doing: "setting " + annotationKey + " on ManagedWorkload " + name, name: name, role: roleEdit, namespace: mw.Namespace})
	}
	if (skew > maxQuietSkew || skew < -maxQuietSkew) && !s.skewNoted {
		s.skewNoted = true
		fmt.Fprintf(o.IO.ErrOut, "note: this machine's clock is %s off the cluster's; the request carries the cluster's time\n", skew.Abs().Round(time.Second))
	}
	ref := mw.Namespace + "/" + mw.Name
	fmt.Fprintf(o.IO.Out, "%s: %s requested (%s=%s); it is %s now\n", ref, a.verb, annotationKey, value, phaseOrUnknown(mw.Status.Phase))
	return mw, nil
}

// maxQuietSkew is how far this machine's clock may be from the cluster's
// before the plugin says so.
const maxQuietSkew = time.Minute

// stamp is the time wake and pause write: the API server's, read from the
// answer to the GET before it, so this machine's clock does not matter; its
// own clock only when no answer carried a Date. skew is how far this
// machine's clock is from the server's (0 when unknown).
func (o *Options) stamp(s *session) (at time.Time, skew time.Duration) {
	local := o.Clock.Now().UTC().Truncate(time.Second)
	server, ok := s.clock.now()
	if !ok {
		return local, 0
	}
	return server, local.Sub(server)
}

// verbFor names the request that waits for phase p.
func verbFor(p napwakev1alpha1.Phase) string {
	if p == napwakev1alpha1.PhaseRunning {
		return wakeAction.verb
	}
	return pauseAction.verb
}

func phaseOrUnknown(p napwakev1alpha1.Phase) string {
	if p == "" {
		return "not yet seen by the operator"
	}
	return string(p)
}

// waitForPhase follows mw's phase through a watch until it is want, or
// timeout passes. It shows a live line on a terminal, and a line per phase
// change elsewhere, then how long it took.
func (o *Options) waitForPhase(ctx context.Context, s *session, mw *napwakev1alpha1.ManagedWorkload, want napwakev1alpha1.Phase, timeout time.Duration) error {
	ref := mw.Namespace + "/" + mw.Name
	start := o.Clock.Now()
	if mw.Status.Phase == want {
		fmt.Fprintf(o.IO.Out, "%s is already %s\n", ref, want)
		return nil
	}
	interrupted := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	live := &liveLine{w: o.IO.Out, terminal: o.IsTerminal(o.IO.Out), ref: ref, want: want}
	ticker := o.Clock.NewTicker(time.Second) // refreshes the elapsed time on the live line
	defer ticker.Stop()

	phase, rv := mw.Status.Phase, mw.ResourceVersion
	live.show(phase, 0)
	for phase != want {
		w, err := s.c.Watch(ctx, &napwakev1alpha1.ManagedWorkloadList{},
			client.InNamespace(mw.Namespace), client.MatchingFields{"metadata.name": mw.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return s.explain(ctx, err, s.read("watching ManagedWorkload "+mw.Name, mw.Name))
		}
		phase, rv, err = o.follow(ctx, s, w, ticker.C(), live, mw, phase, rv, start)
		w.Stop()
		if err != nil {
			live.end()
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	live.end()
	took := roundElapsed(o.Clock.Since(start))
	if phase != want && interrupted.Err() != nil {
		return userErrorf("stopped waiting: %s is %s after %s; the %s request stands", ref, phaseOrUnknown(phase), took, verbFor(want))
	}
	if phase != want {
		return userErrorf("%s is still %s after %s (--timeout %s): see why with `kubectl napwake describe %s -n %s`",
			ref, phaseOrUnknown(phase), took, timeout, mw.Name, mw.Namespace)
	}
	fmt.Fprintf(o.IO.Out, "%s is %s after %s\n", ref, want, took)
	return nil
}

// follow reads one watch until the phase is want, the watch ends (the
// caller watches again from rv), or ctx is done.
func (o *Options) follow(ctx context.Context, s *session, w watch.Interface, tick <-chan time.Time, live *liveLine,
	mw *napwakev1alpha1.ManagedWorkload, phase napwakev1alpha1.Phase, rv string, start time.Time) (napwakev1alpha1.Phase, string, error) {
	for {
		select {
		case <-ctx.Done():
			return phase, rv, nil
		case <-tick:
			live.show(phase, o.Clock.Since(start))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return phase, rv, nil
			}
			switch ev.Type {
			case watch.Error:
				if apierrors.FromObject(ev.Object).(apierrors.APIStatus).Status().Code == http.StatusGone {
					// Our resourceVersion is too old: read afresh, watch from there.
					fresh := &napwakev1alpha1.ManagedWorkload{}
					if err := s.c.Get(ctx, client.ObjectKeyFromObject(mw), fresh); err != nil {
						return phase, rv, s.explain(ctx, err, s.read("getting ManagedWorkload "+mw.Name, mw.Name))
					}
					return fresh.Status.Phase, fresh.ResourceVersion, nil
				}
				return phase, rv, userErrorf("watching ManagedWorkload %s: %v", mw.Name, apierrors.FromObject(ev.Object))
			case watch.Deleted:
				return phase, rv, userErrorf("ManagedWorkload %s/%s was deleted while waiting", mw.Namespace, mw.Name)
			case watch.Bookmark:
				if m, ok := ev.Object.(metav1.Object); ok {
					rv = m.GetResourceVersion()
				}
			case watch.Added, watch.Modified:
				cur, ok := ev.Object.(*napwakev1alpha1.ManagedWorkload)
				if !ok {
					return phase, rv, errors.New("watching ManagedWorkloads: unexpected object in the watch")
				}
				rv = cur.ResourceVersion
				if cur.Status.Phase != phase {
					phase = cur.Status.Phase
					live.show(phase, o.Clock.Since(start))
				}
				if phase == live.want {
					return phase, rv, nil
				}
			}
		}
	}
}

// liveLine is the --wait progress: one line rewritten in place on a
// terminal; elsewhere (logs, CI) one line per phase change.
type liveLine struct {
	w        io.Writer
	terminal bool
	ref      string
	want     napwakev1alpha1.Phase
	last     napwakev1alpha1.Phase
	shown    bool
}

func (l *liveLine) show(phase napwakev1alpha1.Phase, elapsed time.Duration) {
	if l.terminal {
		fmt.Fprintf(l.w, "\r\x1b[Kwaiting for %s to be %s: %s, %s", l.ref, l.want, phaseOrUnknown(phase), roundElapsed(elapsed))
		l.shown = true
		return
	}
	if l.shown && phase == l.last {
		return
	}
	l.last, l.shown = phase, true
	fmt.Fprintf(l.w, "waiting for %s to be %s: %s, %s\n", l.ref, l.want, phaseOrUnknown(phase), roundElapsed(elapsed))
}

// end clears the live line so the result prints on a clean line.
func (l *liveLine) end() {
	if l.terminal && l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
}

// roundElapsed rounds to what a person reads: seconds, or tenths under 10s.
func roundElapsed(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
