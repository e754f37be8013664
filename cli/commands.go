package cli

// table is every poolc command: its name, argument synopsis, one-line
// summary (none hides it from the list), help, and the function that
// runs it with its parsed arguments (package arguments). `poolc --help`
// lists them sorted by name.
var table = []*command{
	newCommand("version", "", "print poolc's version", versionHelp, runVersion),
	newCommand("fmt", "[PATH...]", "rewrite pool files in canonical layout", fmtHelp, runFmt),
	newCommand("validate", "[PATH...]", "check a pool for mistakes and report every finding", validateHelp, runValidate),
	newCommand("plugins", "[PATH...]", "list the actuator plugins a pool uses and those found", pluginsHelp, runPlugins),
	newCommand("plan", "[PATH...]", "show the steps that take the fleet to the configuration", planHelp, runPlan),
	newCommand("show", "PLANFILE", "render a saved plan", showHelp, runShow),
	newCommand("apply", "[PLANFILE | PATH...]", "carry out the plan through the actuator plugins", applyHelp, runApply),
	newCommand("simulate", "--scenario NAME|FILE [PATH...] | --list | --print NAME", "replay failures and demand against the pool in virtual time", simulateHelp, runSimulate),
	newCommand("state show", "[PATH...]", "print the current state of the pool", stateShowHelp, runStateShow),
	newCommand("state list", "[PATH...]", "list the addresses of what the state holds", stateListHelp, runStateList),
	newCommand("state push", "FILE [PATH...]", "copy a state file into the pool's etcd store", statePushHelp, runStatePush),
	newCommand("state pull", "[PATH...]", "print the pool's state, or copy it into a file", statePullHelp, runStatePull),
	newCommand("force-unlock", "LOCK_ID [PATH...]", "remove a state lock left by a process that is gone", forceUnlockHelp, runForceUnlock),
	newCommand("gateway config", "[--format haproxy] [--bind ADDR] [--map-out FILE] [PATH...]", "print the gateway configuration that routes the pool's aliases", gatewayConfigHelp, runGatewayConfig),
	newCommand("pods run", "[PATH...] (-f JOB.yaml | -- COMMAND [ARG...])", "launch Jobs on a pod pool, on the first member with room", podsRunHelp, runPodsRun),
	newCommand("pods status", "[PATH...]", "show each pod-pool member's Jobs in use against its capacity", podsStatusHelp, runPodsStatus),
	newCommand("node token create", "--node NAME [PATH...]", "issue a token that enrolls one node", nodeTokenCreateHelp, runNodeTokenCreate),
	newCommand("node join", "[--token T] [--node NAME] [PATH...]", "enroll this machine as a node of the pool", nodeJoinHelp, runNodeJoin),
	newCommand("node agent", "[PATH...]", "keep this node's lease alive and report what it runs", nodeAgentHelp, runNodeAgent),
	newCommand("node list", "[PATH...]", "list the enrolled nodes, up or down, and what they report", nodeListHelp, runNodeList),
	newCommand("node cordon", "NAME [PATH...]", "place no new lane on a node", nodeCordonHelp, runNodeCordon),
	newCommand("node drain", "NAME [PATH...]", "move every lane off a node", nodeDrainHelp, runNodeDrain),
	newCommand("node uncordon", "NAME [PATH...]", "let a node take lanes again", nodeUncordonHelp, runNodeUncordon),
	newCommand("node leave", "NAME [PATH...]", "remove a drained node from the membership", nodeLeaveHelp, runNodeLeave),
	newCommand("etcd serve", "[--data-dir DIR] [--listen HOST:PORT]", "run a one-member etcd on loopback, to try the etcd backend", etcdServeHelp, runEtcdServe),
	newCommand("plugin-serve", "NAME", "", pluginServeHelp, runPluginServe),
}

// commands is the table by name.
var commands = func() map[string]*command {
	m := make(map[string]*command, len(table))
	for _, c := range table {
		m[c.name] = c
	}
	return m
}()
