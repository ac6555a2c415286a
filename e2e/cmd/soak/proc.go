package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"napwake.dev/e2e/soak"
)

// procMemory reads, for each process on this machine whose program is
// one of Napwake's (/operator, /doorman), the kernel's split of its
// resident set, keyed by its pod's name (the HOSTNAME the kubelet gives
// every container). The driver runs on the node itself, as root, so the
// containers' processes are in its /proc; where they are not (the
// driver run elsewhere) it returns nothing, and the lines leave the
// split out.
func procMemory() map[string]soak.Values {
	out := map[string]soak.Values{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		prog, _, _ := bytes.Cut(cmd, []byte{0})
		if p := string(prog); p != "/operator" && p != "/doorman" {
			continue
		}
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue
		}
		var pod string
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("HOSTNAME=")); ok {
				pod = string(v)
			}
		}
		if pod == "" {
			continue
		}
		if v := rssSplit(filepath.Join(dir, "status")); v != nil {
			out[pod] = v
		}
	}
	return out
}

// rssSplit reads RssAnon and RssFile (kB) from a /proc/PID/status.
func rssSplit(path string) soak.Values {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	v := soak.Values{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		key := map[string]string{"RssAnon": soak.RSSAnon, "RssFile": soak.RSSFile}[name]
		if !ok || key == "" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err == nil {
			v[key] = kb * 1024
		}
	}
	if len(v) != 2 {
		return nil
	}
	return v
}
