// Package policysim predicts, without writing anything, where a
// PropagationPolicy or ClusterPropagationPolicy would place the resource
// templates it selects, by running the controllers' own decisions on the
// control plane's current state:
//
//  1. the API server validates the policy with a dry-run create, or, when a
//     policy of that name exists, a dry-run update that replaces its spec
//     (labels and annotations of the file are added to the existing ones):
//     the prediction is then that of changing the existing policy, which
//     keeps its permanent ID and so its claims. The object the server
//     returns, defaults included, is the policy predicted;
//  2. the selected kinds are checked as the detector checks them
//     (detector.KindProblem: served, propagated, scoped right); each
//     problem is a warning;
//  3. the templates of each kind the policy selects (or, when it exists,
//     claims) are listed (detector.SelectedTemplates), and the detector's
//     choice (detector.ChoosePolicy) says, with the predicted policy in
//     place of the stored one, whether the policy claims each template or
//     another policy keeps or gets it;
//  4. the binding is built as the detector builds it (detector.BuildBinding
//     for a new one, detector.MergeBinding onto the existing one), with
//     replicas from the interpreter the controllers use: the
//     ResourceInterpreterCustomizations in the control plane, Lifeboat's
//     shipped third-party rules, then the native rules;
//  5. one scheduling pass (scheduler.PlanPass) on the current Clusters says
//     where it goes: for an existing binding its spec.clusters, status and
//     applied-placement annotation are taken into account as the scheduler
//     does, so an unchanged placement stays where it is.
//
// What the prediction cannot know: templates, Clusters or policies that
// change between the prediction and the apply; activationPreference Lazy,
// under which a changed policy reaches an existing binding only at the
// template's next change (the prediction shows the eventual placement and
// says so).
package policysim
