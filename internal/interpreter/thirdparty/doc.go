// Package thirdparty ships Lifeboat's own interpreter rules for popular
// custom resources, written as ResourceInterpreterCustomization manifests
// (Lua) so that users can read them, copy them and override them:
//
//   - flink.apache.org/v1beta1 FlinkDeployment
//   - argoproj.io/v1alpha1 Rollout
//   - apps.kruise.io/v1alpha1 CloneSet
//
// The manifests are embedded from customizations/<group>/<version>/<Kind>/
// customizations.yaml. In the interpreter chain they sit after the users'
// customizations and before the native rules. The package writes no API
// objects.
package thirdparty
