// Package pools is the vocabulary every poolc package shares: the
// intermediate representation (IR) of a pool that both front ends produce,
// and the diagnostics every stage reports.
//
// The IR holds no source positions, so a pool written in CUE and the same
// pool written in HCL compare equal. Positions live beside the IR in a
// SourceMap keyed by attribute path; code that cannot see the configuration
// reports a Path and the compiler attaches the file:line:col.
package pools
