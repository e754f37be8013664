// Package views is how poolc's commands show what they do: pure writers
// to an io.Writer, for people (text, a terminal's live display, markdown)
// and for machines (JSON), chosen by the command and tested without it.
package views

// JSONFormatVersion is the version of poolc's JSON outputs (a number in
// every document); it changes only when a field changes meaning or goes
// away.
const JSONFormatVersion = 1
