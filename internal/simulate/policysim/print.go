package policysim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// PrintTable writes the prediction for people: a line naming the policy,
// the warnings, then one row per template with its binding, outcome and
// clusters (name:replicas) or the reason it is not placed, and its notes
// indented below it.
func PrintTable(w io.Writer, p *Prediction) error {
	verb := "Creating"
	if p.Existing {
		verb = "Changing the existing"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s would place (nothing was written):\n", verb, p.Policy)
	for _, warning := range p.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", warning)
	}
	if len(p.Templates) == 0 {
		b.WriteString("No resource template is selected.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tBINDING\tREPLICAS\tOUTCOME\tCLUSTERS / DETAIL")
	for _, t := range p.Templates {
		ns := t.Namespace
		if ns == "" {
			ns = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", t.Kind, ns, t.Name, t.Binding, t.Replicas, t.Outcome, detail(t))
		for _, n := range t.Notes {
			fmt.Fprintf(tw, "\t\t\t\t\t\t  (%s)\n", n)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("formatting the table: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// detail is the last column: the clusters for a placement, else the
// message (with the clusters a failed schedule keeps).
func detail(t TemplateResult) string {
	clusters := formatClusters(t.Clusters)
	switch {
	case t.Outcome == OutcomeScheduled:
		return clusters
	case len(t.Clusters) > 0:
		return t.Message + " Kept: " + clusters
	}
	return t.Message
}

// formatClusters renders clusters as "member1:2, member2:1", "-" for none.
func formatClusters(cs []ClusterReplicas) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Name, c.Replicas))
	}
	return strings.Join(parts, ", ")
}
