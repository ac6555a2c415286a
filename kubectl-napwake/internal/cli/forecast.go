package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"napwake.dev/kubectl-napwake/internal/render"
)

func newForecastCommand(o *Options) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "forecast NAME",
		Short: "Draw the hold the forecast would choose per hour of the week, last week's hits and misses, and its figures",
		Long: `Draw what the operator's forecast learned for a workload, from its
status.forecast: a 7×24 grid in spec.forecast.timeZone, each hour by the
chance someone returns within the hold the forecast would choose for an
idle stretch begun then (█ 0.5 or more; ▒ less, but held; · not held: it
pauses at idleAfter, and pauseEarly may pause it sooner), marked with last
week's hits and misses; then what the forecast did and cost (cold starts,
wakes used, early pauses regretted, awake time by what woke it). -o json
prints the same as an object.`,
		Args: exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "" && format != "json" {
				return usageErrorf("--output %q is not supported: use json, or leave it out for the grid", format)
			}
			if o.allNamespaces {
				return usageErrorf("-A/--all-namespaces does not go with a NAME: pass -n NAMESPACE")
			}
			name, err := parseName(args[0])
			if err != nil {
				return err
			}
			_, mw, err := o.getWorkload(cmd.Context(), name)
			if err != nil {
				return err
			}
			v := render.ForecastOf(mw, o.Clock.Now())
			if format == "json" {
				enc := json.NewEncoder(o.IO.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			render.Forecast(o.IO.Out, v, o.renderOptions(false))
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "Output format: json, or the grid when unset.")
	return cmd
}
