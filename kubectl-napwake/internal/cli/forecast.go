package cli

import (
	"github.com/spf13/cobra"

	"napwake.dev/kubectl-napwake/internal/render"
)

func newForecastCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "forecast NAME",
		Short: "Draw the week the forecast expects for a workload, as a 7×24 grid",
		Args:  exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, mw, err := o.getWorkload(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			render.Forecast(o.IO.Out, mw, o.renderOptions(false))
			return nil
		},
	}
}
