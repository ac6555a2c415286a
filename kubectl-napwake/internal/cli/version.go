package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
	"napwake.dev/shared/version"
)

// Component is the plugin's name in version.Info.
const Component = "kubectl-napwake"

// operatorLookupTimeout bounds reading the operator's version: `version`
// must answer promptly even when the cluster does not.
const operatorLookupTimeout = 10 * time.Second

func newVersionCommand(o *Options) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and, when the cluster is reachable, the operator's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "" && format != "json" && format != "yaml" {
				return usageErrorf("unknown output format %q for version: use -o json or -o yaml", format)
			}
			r := render.VersionReport{Plugin: pluginVersion(), Operator: o.operatorVersion(cmd.Context())}
			switch format {
			case "":
				render.Version(o.IO.Out, r, o.renderOptions(false))
				return nil
			case "json":
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return fmt.Errorf("encoding the version: %w", err)
				}
				_, err = fmt.Fprintln(o.IO.Out, string(b))
				return err
			case "yaml":
				b, err := yaml.Marshal(r)
				if err != nil {
					return fmt.Errorf("encoding the version: %w", err)
				}
				_, err = o.IO.Out.Write(b)
				return err
			default:
				return usageErrorf("unknown output format %q for version: use -o json or -o yaml", format)
			}
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "Output format. One of: (json, yaml).")
	return cmd
}

// pluginVersion is version.Get, except that a binary built by
// `go install napwake.dev/kubectl-napwake@vX.Y.Z` (no ldflags) reports the
// module version Go recorded instead of "dev".
func pluginVersion() version.Info {
	info := version.Get(Component)
	if info.Version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	return info
}

// operatorVersion reads app.kubernetes.io/version from the operator's pods in
// any namespace; "unknown", with the reason, when it cannot.
func (o *Options) operatorVersion(ctx context.Context) render.OperatorVersion {
	unknown := func(reason string) render.OperatorVersion {
		return render.OperatorVersion{Version: render.Unknown, Reason: reason}
	}
	s, err := o.connect()
	if err != nil {
		return unknown(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, operatorLookupTimeout)
	defer cancel()
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.MatchingLabels{
		napwakev1alpha1.LabelControlPlane: napwakev1alpha1.ControlPlaneOperator,
		napwakev1alpha1.LabelAppName:      napwakev1alpha1.AppName,
	}); err != nil {
		return unknown(s.explain(ctx, err, request{doing: "listing the operator's pods"}).Error())
	}
	var versions, namespaces []string
	for _, p := range pods.Items {
		if v := p.Labels[napwakev1alpha1.LabelAppVersion]; v != "" && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
		if !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
	}
	if len(versions) == 0 {
		return unknown(fmt.Sprintf("no operator pods labelled %s=%s,%s=%s with %s found",
			napwakev1alpha1.LabelControlPlane, napwakev1alpha1.ControlPlaneOperator, napwakev1alpha1.LabelAppName, napwakev1alpha1.AppName, napwakev1alpha1.LabelAppVersion))
	}
	slices.Sort(versions)
	slices.Sort(namespaces)
	// Two versions at once: an upgrade is rolling out.
	return render.OperatorVersion{Version: strings.Join(versions, ", "), Namespace: strings.Join(namespaces, ", ")}
}
