//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// tierStartup is each tier's start-up time (its readiness passes after it).
const tierStartup = 3 * time.Second

// tiers are the environment, front end first: each calls the next one's
// Service.
var tiers = []string{"front", "api", "db"}

// scenarioEnvironmentWakesAsOne: front → api → db, each a sample app whose
// answer includes the next one's. First with no declared dependency, all
// paused: one request to the front end gets the whole answer, each tier woken
// by its caller's held call in turn (the sum of their start times), and the
// operator learns front → api and api → db from the doorman's
// last-request-from. Then with the chain declared (napwake.dev/depends-on),
// all paused: one request wakes all three at once, the others as
// "dependent".
func scenarioEnvironmentWakesAsOne(ctx context.Context, ns string) {
	ips := map[string]string{}
	for _, name := range tiers {
		svc := framework.SampleApp{Name: name, Namespace: ns}.Service()
		Expect(fw.Client.Create(ctx, svc)).To(Succeed())
		ip, err := fw.ClusterIP(ctx, ns, name)
		Expect(err).NotTo(HaveOccurred())
		ips[name] = ip
	}
	for i, name := range tiers {
		app := optedIn(name, ns, 1, longIdle)
		app.StartupDelay, app.Message = tierStartup, "answer from "+name
		if i+1 < len(tiers) {
			app.Upstream = "http://" + ips[tiers[i+1]] + "/" // no cluster DNS: the ClusterIP
		}
		_, err := fw.Clientset.AppsV1().Deployments(ns).Create(ctx, app.Deployment(), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range tiers {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))
	}

	By("each tier alone: paused while the others are awake, one request to it")
	alone := map[string]time.Duration{}
	var slowest time.Duration
	for _, name := range tiers {
		pauseNow(ctx, ns, name)
		alone[name] = requestTier(ctx, ns, name, "alone-"+name)
		slowest = max(slowest, alone[name])
	}

	By("one request to the paused front end, nothing declared: each tier wakes when called")
	pauseAll(ctx, ns)
	oneByOne := requestTheFront(ctx, ns, "client-1")
	for i := range len(tiers) - 1 {
		caller, callee := tiers[i], tiers[i+1]
		Eventually(func() ([]string, error) { return learnedOf(ctx, ns, caller) }).WithTimeout(time.Minute).
			Should(ContainElement(ns+"/"+callee), "the operator learns "+caller+" → "+callee+" from the doorman's last-request-from")
	}

	By("the chain declared, all paused: one request wakes all three at once")
	declare(ctx, ns, "front", "api")
	declare(ctx, ns, "api", "db")
	pauseAll(ctx, ns)
	together := requestTheFront(ctx, ns, "client-2")
	// What woke each is read from its Waking event: its
	// lastActivitySource says "dependent" only until the doorman stamps
	// the connections it passed through to it as activity.
	for _, name := range tiers[1:] {
		Eventually(func() ([]string, error) {
			return fw.EventMessages(ctx, ns, "ManagedWorkload", name, napwakev1alpha1.EventWaking)
		}).Should(ContainElement(ContainSubstring("woken by dependent "+ns+"/front")), name+" is woken as front's dependency")
	}
	bound := slowest*12/10 + 500*time.Millisecond
	report := fmt.Sprintf("three-deep chain, each tier Ready %s after it starts: each alone front %s, api %s, db %s; "+
		"member by member %s, declared (all at once) %s = %.2f x the slowest alone; bound 1.2 x slowest + 0.5 s = %s",
		tierStartup, alone["front"], alone["api"], alone["db"], oneByOne, together, float64(together)/float64(slowest), bound)
	GinkgoWriter.Println(report)
	AddReportEntry("three-deep chain", report)
	// The strict bound is the benchmark's (docs/bench/deps.md); here only
	// what a wake one tier at a time would break: the chain woken as one
	// costs less than the three starts in a row.
	Expect(together).To(BeNumerically("<", oneByOne), "declared, the tiers start together, not one after another")
	Expect(together).To(BeNumerically("<", 2*slowest+2*time.Second), "declared, the chain takes about one tier's start")
	if out := os.Getenv("NAPWAKE_E2E_BENCH_OUT"); out != "" {
		Expect(os.WriteFile(out, []byte(report+"\n"), 0o644)).To(Succeed())
	}
}

// pauseAll pauses every tier, front end first, and waits for each to be
// Paused and routed.
func pauseAll(ctx context.Context, ns string) {
	for _, name := range tiers {
		pauseNow(ctx, ns, name)
	}
}

var tookRE = regexp.MustCompile(` in ([0-9.]+m?s)\n`)

// requestTheFront sends one request to the front end from a client pod,
// checks it got the whole chain's answer and that every tier ends Running,
// and returns how long the request took as the client measured it.
func requestTheFront(ctx context.Context, ns, pod string) time.Duration {
	return requestTier(ctx, ns, tiers[0], pod)
}

// requestTier sends one request to tier from a client pod, checks it got
// the answer of tier and of every tier after it and that every tier ends
// Running, and returns how long the request took as the client measured it.
func requestTier(ctx context.Context, ns, tier, pod string) time.Duration {
	logs := clientGet(ctx, ns, pod, serviceURL(tier, ns, "/"))
	Expect(logs).To(ContainSubstring("200 OK"), "the held request got the app's answer, not an error")
	for _, name := range tiers[slices.Index(tiers, tier):] {
		Expect(logs).To(ContainSubstring("answer from "+name), "%s's answer includes every tier's after it", tier)
	}
	for _, name := range tiers {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	}
	m := tookRE.FindStringSubmatch(logs)
	Expect(m).NotTo(BeNil(), "the client says how long it took")
	took, err := time.ParseDuration(m[1])
	Expect(err).NotTo(HaveOccurred())
	return took
}

// declare sets napwake.dev/depends-on on a tier's Deployment and waits for
// its ManagedWorkload to carry it.
func declare(ctx context.Context, ns, name, dep string) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, napwakev1alpha1.AnnotationDependsOn, dep)
	_, err := fw.Clientset.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() ([]napwakev1alpha1.DependencyRef, error) {
		mw, err := fw.ManagedWorkload(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return mw.Spec.Dependencies, nil
	}).Should(ContainElement(napwakev1alpha1.DependencyRef{Name: dep}))
}

// learnedOf lists a workload's learned dependencies as "ns/name".
func learnedOf(ctx context.Context, ns, name string) ([]string, error) {
	mw, err := fw.ManagedWorkload(ctx, ns, name)
	if err != nil || mw.Status.Dependencies == nil {
		return nil, err
	}
	var out []string
	for _, l := range mw.Status.Dependencies.Learned {
		out = append(out, strings.Join([]string{l.Namespace, l.Name}, "/"))
	}
	return out, nil
}
