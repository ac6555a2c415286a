package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is a headless Chromium (Debian's chromium or
// chromium-headless-shell, hack/packages.sh) driven over the DevTools
// protocol. The suite runs in the node's network namespace, and so does the
// browser it starts, so it opens ClusterIPs as a person's browser opens an
// environment's address. It ignores certificate errors: the suite's TLS
// front has a self-signed certificate. It sends the User-Agent of the same
// Chromium with a window (BrowserUA), not its headless one: the doorman
// takes "HeadlessChrome" for a robot, as the spec says, and a person's
// browser is what the suite plays.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// ChromiumPath finds the browser: $NAPWAKE_E2E_CHROMIUM, else chromium or
// chromium-headless-shell on PATH.
func ChromiumPath() (string, error) {
	if p := os.Getenv("NAPWAKE_E2E_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium or chromium-headless-shell on PATH: run hack/packages.sh")
}

// NewBrowser starts the browser; Close stops it.
func NewBrowser(ctx context.Context, extra ...chromedp.ExecAllocatorOption) (*Browser, error) {
	path, err := ChromiumPath()
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.IgnoreCertErrors,
		chromedp.WindowSize(900, 640), chromedp.UserAgent(BrowserUA))
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts it
		bcancel()
		acancel()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return &Browser{ctx: bctx, cancel: func() { bcancel(); acancel() }}, nil
}

// ResolveTo makes the browser resolve every name matching pattern (such as
// "*.napwake.test") to ip, as a DNS record would: the test bed's ingress
// hosts have no DNS of their own.
func ResolveTo(pattern, ip string) chromedp.ExecAllocatorOption {
	return chromedp.Flag("host-resolver-rules", "MAP "+pattern+" "+ip)
}

// BrowserUA is Chromium 156's User-Agent on Linux with a window.
const BrowserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

// Close stops the browser.
func (b *Browser) Close() { b.cancel() }

// Tab is one browser tab.
type Tab struct{ ctx context.Context }

// NewTab opens a tab.
func (b *Browser) NewTab() (*Tab, error) {
	ctx, _ := chromedp.NewContext(b.ctx) // closed with the browser
	if err := chromedp.Do(ctx); err != nil {
		return nil, fmt.Errorf("opening a tab: %w", err)
	}
	return &Tab{ctx: ctx}, nil
}

// within runs steps with a bound.
func (t *Tab) within(d time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(t.ctx, d)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// Open navigates to url and waits until the selector is visible.
func (t *Tab) Open(url, visible string) error {
	return t.within(30*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(visible)))
}

// Click clicks the first element matching sel, as a person does, and waits
// until the page it leads to shows visible.
func (t *Tab) Click(sel, visible string) error {
	return t.within(30*time.Second, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(visible)))
}

// WaitVisible waits up to d for the selector, across the page's own reloads.
func (t *Tab) WaitVisible(visible string, d time.Duration) error {
	return t.within(d, chromedp.WaitVisible(chromedp.CSS(visible)))
}

// Text is the text of the first element matching sel.
func (t *Tab) Text(sel string) (string, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
}

// Status is the HTTP status of the page shown now, as the browser got it
// (Navigation Timing's responseStatus).
func (t *Tab) Status() (int, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType("navigation")[0].responseStatus`))
	return int(s), err
}

// Screenshot writes a PNG of the page shown now to path.
func (t *Tab) Screenshot(path string) error {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return fmt.Errorf("taking a screenshot: %w", err)
	}
	return os.WriteFile(path, png, 0o644)
}
