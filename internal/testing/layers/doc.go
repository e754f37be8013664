// Package layers holds the test that keeps poolc's import arrows pointing
// down: a package imports only packages of its own layer or below, an
// actuator imports no other actuator, and no actuator reads the
// configuration or the state itself (the host does, and hands the plugin
// what it needs). The layers, bottom up, are in layers_test.go.
package layers
