package kube

import (
	"context"
	"crypto/rand"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/proxy"
)

const wakeKeyName = "napwake-doorman-wake-key"

// emptySecret creates the chart's empty wake key Secret.
func emptySecret(t *testing.T, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: wakeKeyName}, Type: corev1.SecretTypeOpaque}
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func secretData(t *testing.T, ns string) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: wakeKeyName}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

func setSecretData(t *testing.T, ns string, data map[string][]byte) {
	t.Helper()
	var s corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: wakeKeyName}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data = data
	if err := k8s.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
}

func refresh(t *testing.T, k *WakeKey) {
	t.Helper()
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTwoPodsFindingTheSecretEmptyAgreeOnOneKey(t *testing.T) {
	ns := newNamespace(t)
	emptySecret(t, ns)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	a := NewWakeKey(k8s, ns, wakeKeyName, clk, rand.Reader, logr.Discard())
	b := NewWakeKey(k8s, ns, wakeKeyName, clk, rand.Reader, logr.Discard())
	errs := make(chan error, 2)
	for _, k := range []*WakeKey{a, b} {
		go func() { errs <- k.Refresh(context.Background()) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ka, kb := a.Ring().Current(), b.Ring().Current()
	if ka.ID == "" || ka.ID != kb.ID {
		t.Fatalf("the pods use keys %q and %q, want one", ka.ID, kb.ID)
	}
	keys, err := ask.ParseSecret(secretData(t, ns))
	if err != nil || keys.Current.ID != ka.ID {
		t.Fatalf("the Secret holds %v (%v), want key %s", keys.Current, err, ka.ID)
	}
}

func TestEmptyingTheSecretRotatesTheKey(t *testing.T) {
	ns := newNamespace(t)
	emptySecret(t, ns)
	t0 := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakePassiveClock(t0)
	a := NewWakeKey(k8s, ns, wakeKeyName, clk, rand.Reader, logr.Discard())
	b := NewWakeKey(k8s, ns, wakeKeyName, clk, rand.Reader, logr.Discard())
	refresh(t, a)
	refresh(t, b)
	old := a.Ring().Current()
	oldTok := ask.Issue(old, "ns/w", t0, t0)

	setSecretData(t, ns, nil) // kubectl patch ... remove /data
	clk.SetTime(t0.Add(time.Hour))
	refresh(t, a) // a finds it empty and fills it, keeping old as previous
	clk.SetTime(t0.Add(time.Hour + 20*time.Second))
	refresh(t, b) // b reads what a wrote within its half minute
	for name, k := range map[string]*WakeKey{"the pod that filled it": a, "the other pod": b} {
		r := k.Ring()
		if r.Current().ID == old.ID || r.Current().ID != a.Ring().Current().ID {
			t.Fatalf("%s: current key %s, want the new one", name, r.Current().ID)
		}
		now := clk.Now()
		if s, _ := r.Signer(now); s.ID != old.ID {
			t.Fatalf("%s signs with %s within the minute, want the old key everyone knows", name, s.ID)
		}
		if s, _ := r.Signer(t0.Add(time.Hour + time.Minute)); s.ID == old.ID {
			t.Fatalf("%s still signs with the old key a minute after the switch", name)
		}
		if v := ask.Verify(oldTok, r, "ns/w", t0, t0.Add(time.Minute)); v != ask.TokenGood {
			t.Fatalf("%s: a token of the old key is %v, want good while it is accepted", name, v)
		}
		if accepts(r, old.ID, t0.Add(time.Hour+12*time.Minute+20*time.Second)) {
			t.Fatalf("%s still accepts the old key more than 11 minutes after switching", name)
		}
		if !accepts(r, old.ID, t0.Add(time.Hour+10*time.Minute)) {
			t.Fatalf("%s no longer accepts the old key 10 minutes after switching", name)
		}
	}
}

func accepts(r *ask.Ring, id string, at time.Time) bool {
	for _, a := range r.Accepts(at) {
		if a == id {
			return true
		}
	}
	return false
}

func TestASecretWithGarbageIsFilledAfresh(t *testing.T) {
	ns := newNamespace(t)
	emptySecret(t, ns)
	setSecretData(t, ns, map[string][]byte{"key": []byte("short"), "switched-at": []byte("<script>")})
	k := NewWakeKey(k8s, ns, wakeKeyName, clocktesting.NewFakePassiveClock(time.Now()), rand.Reader, logr.Discard())
	refresh(t, k)
	keys, err := ask.ParseSecret(secretData(t, ns))
	if err != nil || keys.Current.ID != k.Ring().Current().ID {
		t.Fatalf("the Secret holds %v (%v), want the pod's key %s", keys.Current, err, k.Ring().Current().ID)
	}
}

func TestASecretDeletedUnderARunningDoormanKeepsItsKey(t *testing.T) {
	ns := newNamespace(t)
	emptySecret(t, ns)
	k := NewWakeKey(k8s, ns, wakeKeyName, clocktesting.NewFakePassiveClock(time.Now()), rand.Reader, logr.Discard())
	refresh(t, k)
	id := k.Ring().Current().ID
	if err := k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: wakeKeyName}}); err != nil {
		t.Fatal(err)
	}
	refresh(t, k)
	if got := k.Ring().Current().ID; got != id {
		t.Fatalf("after the Secret went the pod signs with %q, want its key %q", got, id)
	}
}

func TestAClickWakesOnceAMinuteWhicheverPodItReaches(t *testing.T) {
	ns := newNamespace(t)
	pausedAt := time.Now().Add(-time.Hour)
	createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	rec := record.NewFakeRecorder(10)
	pods := []*Hooks{NewHooks(k8s, rec, clk, logr.Discard()), NewHooks(k8s, rec, clk, logr.Discard())}
	w := proxy.Workload{Namespace: ns, Name: "api", Ask: true, Phase: "Paused", PausedAt: pausedAt}
	from := netip.MustParseAddr("10.0.0.7")
	// Two pods click at once: one wakes.
	results := make(chan bool, 2)
	for _, h := range pods {
		go func() {
			woke, err := h.Click(context.Background(), w, "api", from)
			if err != nil {
				t.Error(err)
			}
			results <- woke
		}()
	}
	if a, b := <-results, <-results; a == b {
		t.Fatalf("two clicks at once woke %v and %v, want exactly one", a, b)
	}
	var mw napwakev1alpha1.ManagedWorkload
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "api"}, &mw); err != nil {
		t.Fatal(err)
	}
	if got, want := mw.Annotations[napwakev1alpha1.AnnotationLastRequest], clk.Now().UTC().Format(time.RFC3339Nano); got != want {
		t.Fatalf("last-request %q, want %q", got, want)
	}
	if got := mw.Annotations[napwakev1alpha1.AnnotationLastRequestFrom]; got != "10.0.0.7" {
		t.Fatalf("last-request-from %q", got)
	}
	// 59 s later, at the other pod: too soon. At 60 s: it wakes.
	clk.SetTime(clk.Now().Add(59 * time.Second))
	if woke, err := pods[1].Click(context.Background(), w, "api", from); err != nil || woke {
		t.Fatalf("a click 59 s later woke %v (%v), want too soon", woke, err)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if woke, err := pods[0].Click(context.Background(), w, "api", from); err != nil || !woke {
		t.Fatalf("a click a minute later woke %v (%v), want a wake", woke, err)
	}
	if n := len(rec.Events); n != 2 {
		t.Fatalf("%d WokenByRequest events, want 2", n)
	}
}

func TestAClickWithAnUnknownKeyMakesThePodReadTheSecretAgain(t *testing.T) {
	ns := newNamespace(t)
	emptySecret(t, ns)
	fc := clocktesting.NewFakeClock(time.Now())
	b := NewWakeKey(k8s, ns, wakeKeyName, fc, rand.Reader, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx, fc)
	pollUntil(t, "the timer set", fc.HasWaiters)
	fc.Step(0) // the first read
	pollUntil(t, "the first key", func() bool { return !b.Ring().Empty() })
	first := b.Ring().Current().ID

	setSecretData(t, ns, nil)
	a := NewWakeKey(k8s, ns, wakeKeyName, fc, rand.Reader, logr.Discard())
	refresh(t, a) // another pod fills it afresh
	fc.Step(unknownEvery)
	b.Unknown() // a click signed by a's key reached b
	pollUntil(t, "b reading a's key", func() bool { return b.Ring().Current().ID == a.Ring().Current().ID })
	if a.Ring().Current().ID == first {
		t.Fatalf("the Secret was not refilled")
	}
}

// pollUntil polls cond every 10 ms for up to 10 s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling with a bound
	}
}
