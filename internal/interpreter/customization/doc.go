// Package customization serves ResourceInterpreterCustomizations
// (config.karmada.io/v1alpha1) to the interpreter: its Reconciler watches
// them, compiles their Lua scripts (internal/interpreter/lua) as soon as
// they change, and keeps a Layer of rules that sits first in the
// interpreter chain built by NewInterpreter (customizations, then the
// shipped third-party rules, then the native rules).
//
// When the rules of a kind change (a customization for it is created,
// changed or deleted), the Reconciler tells the Layer's OnKindChanged
// subscribers, so that the controller owning member statuses interprets
// that kind's objects again with the new rules.
//
// The controller writes no object fields: ResourceInterpreterCustomization
// has no status in our API (nor in Karmada's). Problems are Warning Events
// on the customization: ScriptInvalid when a script does not compile or
// does not define its function (once per change), ScriptFailed when a
// script fails while interpreting an object (once per distinct error per
// minute).
package customization
