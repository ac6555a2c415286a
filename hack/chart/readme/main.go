// Command readme writes the Napwake chart's README.md and values.schema.json
// from the comments in its values.yaml (schema.go says how a comment gives a
// key's schema), and with -check says whether both are up to date.
//
// A key is documented by a comment block right above it whose first line
// starts with "# --". Every leaf value (a scalar, a list, or a map without
// documented keys inside) must be documented: an undocumented one is an
// error, so the README never silently lacks a value.
//
//	GOWORK=off go -C hack/chart run ./readme -chart ../../charts/napwake [-check]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "readme:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("readme", flag.ContinueOnError)
	chart := fs.String("chart", "charts/napwake", "the chart's directory")
	check := fs.Bool("check", false, "do not write: fail if README.md or values.schema.json is not what the values' comments make")
	if err := fs.Parse(args); err != nil {
		return err
	}
	values, err := os.ReadFile(filepath.Join(*chart, "values.yaml"))
	if err != nil {
		return fmt.Errorf("reading values: %w", err)
	}
	readme, err := Render(values)
	if err != nil {
		return err
	}
	schema, err := Schema(values)
	if err != nil {
		return err
	}
	for _, out := range []struct {
		name string
		want []byte
	}{{"README.md", readme}, {"values.schema.json", schema}} {
		path := filepath.Join(*chart, out.name)
		if *check {
			have, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			if !bytes.Equal(have, out.want) {
				return fmt.Errorf("%s is out of date with values.yaml: run hack/chart/render.sh", path)
			}
			continue
		}
		if err := os.WriteFile(path, out.want, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// Value is one documented value of the chart.
type Value struct {
	Key         string // dotted path, such as doorman.image.tag
	Type        string // string, int, bool, list or object
	Default     string // JSON of the default
	Description string
}

const docMarker = "# --"

// Values returns the chart's documented values, in the order of values.yaml.
func Values(values []byte) ([]Value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("parsing values: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a map")
	}
	var out []Value
	var undocumented []string
	walk(doc.Content[0], "", &out, &undocumented)
	if len(undocumented) > 0 {
		return nil, fmt.Errorf("values without a %q comment: %s", docMarker, strings.Join(undocumented, ", "))
	}
	return out, nil
}

func walk(m *yaml.Node, prefix string, out *[]Value, undocumented *[]string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		desc, documented := description(k.HeadComment)
		nested := v.Kind == yaml.MappingNode && hasDocumented(v)
		if documented {
			val := Value{Key: key, Type: typeOf(v), Description: desc}
			if !nested {
				val.Default = defaultOf(v)
			}
			*out = append(*out, val)
		} else if !nested && v.Kind != yaml.MappingNode {
			*undocumented = append(*undocumented, key)
		}
		if v.Kind == yaml.MappingNode && (nested || !documented) {
			walk(v, key+".", out, undocumented)
		}
	}
}

// hasDocumented says whether a map documents any key inside it, at any depth.
func hasDocumented(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if _, ok := description(m.Content[i].HeadComment); ok {
			return true
		}
		if v := m.Content[i+1]; v.Kind == yaml.MappingNode && hasDocumented(v) {
			return true
		}
	}
	return false
}

// description takes the last comment block above a key (blank lines split
// blocks) and returns its text if it starts with the marker.
func description(head string) (string, bool) {
	blocks := strings.Split(head, "\n\n")
	block := strings.TrimSpace(blocks[len(blocks)-1])
	if !strings.HasPrefix(block, docMarker) {
		return "", false
	}
	if at := strings.Index(block, schemaMarker); at >= 0 {
		block = block[:at] // the key's schema, not its description
	}
	var words []string
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, docMarker)
		line = strings.TrimPrefix(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			words = append(words, line)
		}
	}
	return strings.Join(words, " "), true
}

func typeOf(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "object"
	}
	switch v.Tag {
	case "!!int":
		return "int"
	case "!!bool":
		return "bool"
	case "!!float":
		return "number"
	}
	return "string"
}

func defaultOf(v *yaml.Node) string {
	var x any
	if err := v.Decode(&x); err != nil {
		return v.Value
	}
	b, err := json.Marshal(x)
	if err != nil {
		return v.Value
	}
	return string(b)
}

const header = `# Napwake Helm chart

Napwake pauses idle Deployments and StatefulSets (and any other kind with a
scale subresource that ` + "`operator.targetKinds`" + ` lists) by scaling them to
zero, and wakes them when a request arrives, through a TCP proxy called the
doorman.

` + "```" + `bash
kubectl create namespace napwake-system
kubectl label namespace napwake-system pod-security.kubernetes.io/enforce=restricted
helm install napwake charts/napwake --namespace napwake-system
` + "```" + `

- **Images.** Each component has its own image (` + "`operator.image`, `doorman.image`" + `),
  so each upgrades on its own: ` + "`helm upgrade napwake charts/napwake -n napwake-system --reuse-values --set doorman.image.tag=...`" + `
  replaces only the doorman's pods. A digest wins over a tag.
- **The CRD** is a template: the chart installs and upgrades it (` + "`crds.enabled`" + `).
  ` + "`helm uninstall`" + ` keeps it, and every ManagedWorkload with it (` + "`crds.keep`" + `), and removes
  everything else, the wake key included. A release installed before the CRD was a template
  adopts it once before upgrading: see [docs/upgrade.md](../../docs/upgrade.md).
- **The wake key** Secret (` + "`<release>-doorman-wake-key`" + `) signs the **Wake it** buttons of workloads
  with ` + "`wake.mode: Ask`" + `. It is created empty and filled by the first doorman pod, with a write
  guarded by its resourceVersion so every pod agrees on one key. Upgrades never touch its data
  (the chart renders none, so the key never sits in Helm's release records). The doorman may
  only get and update this one Secret. To change the key, empty it: each doorman pod signs with
  the new one within a minute, and accepts the old one for 11 minutes after switching.
- **The NEG forwarder** (` + "`doorman.negForwarder.enabled`" + `, off): for paused workloads behind a GKE
  Ingress on NEGs or a GKE Gateway. The operator then runs ` + "`napwake-forwarder-<workload>`" + ` beside
  them, from ` + "`doorman.negForwarder.image`" + `, and may create and delete only those Deployments
  (an admission policy narrows its RBAC to them).
- **KEDA and CronJobs** (` + "`autoscalers.keda.enabled`" + `, ` + "`cronJobs.suspend`" + `, both off): a pause holds the
  KEDA ScaledObjects of its workload at 0, and the CronJobs of a namespace whose workloads all
  sleep are suspended. Each adds its RBAC rule (patch on ` + "`scaledobjects.keda.sh`" + `, on
  ` + "`cronjobs`" + `) only when on; Napwake undoes only what it recorded ([pausing](../../docs/pause.md)).
- **Admission policies** (` + "`doorman.admissionPolicy.enabled`" + `, on): only the doorman's
  ServiceAccount may set ` + "`napwake.dev/last-request`" + ` and ` + "`napwake.dev/last-request-from`" + `, and it
  may change nothing else on a ManagedWorkload. Tooling wakes a workload with
  ` + "`napwake.dev/wake-requested`" + ` or ` + "`napwake.dev/last-activity`" + ` instead.
- **People's access** (` + "`rbac.aggregateClusterRoles`" + `, on): ` + "`<release>-view`" + ` (get, list, watch
  ManagedWorkloads) is folded into the built-in ` + "`view`, `edit` and `admin`" + ` ClusterRoles and
  ` + "`<release>-edit`" + ` (patch them) into ` + "`edit` and `admin`" + `, so a RoleBinding to ` + "`view`" + ` in a
  namespace lets ` + "`kubectl napwake status`" + ` and ` + "`describe`" + ` run there, and one to ` + "`edit`" + ` also
  ` + "`wake`" + ` and ` + "`pause`" + `. Off, bind the two roles yourself. See docs/kubectl-plugin.md.
- **Who may reach the doorman**: set ` + "`networkPolicy.enabled`" + ` and list your paused
  workloads' real callers in ` + "`doorman.networkPolicy.ingressFrom`" + ` (NetworkPolicy peers);
  ` + "`ingressFrom`" + ` without ` + "`networkPolicy.enabled`" + ` is refused.
- **Where the doorman may connect** (` + "`doorman.networkPolicy.egress.enabled`" + `): the pod CIDRs
  (` + "`podCIDRs`" + `) and the API server. Some CNIs, Cilium among them, do not match pod addresses by
  ` + "`ipBlock`" + `, and the doorman then reaches no woken pod: give ` + "`podsTo: [{namespaceSelector: {}}]`" + `
  (every pod in the cluster, by selector) instead of, or beside, ` + "`podCIDRs`" + `.
- **Without Helm**: ` + "`deploy/install.yaml`" + ` or the Kustomize base ` + "`deploy/kustomize`" + ` (the
  defaults, namespace ` + "`napwake-system`" + `).

<!-- Generated by hack/chart/readme from the comments in values.yaml: edit those, then run hack/chart/render.sh. -->

## Values

| Key | Type | Default | Description |
| --- | --- | --- | --- |
`

// Render returns the README for a values.yaml.
func Render(values []byte) ([]byte, error) {
	vals, err := Values(values)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	for _, v := range vals {
		def := ""
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Key, v.Type, cell(def), cell(v.Description))
	}
	return b.Bytes(), nil
}

// cell escapes what would break a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
