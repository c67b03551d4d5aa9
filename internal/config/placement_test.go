package config

import "testing"

// replica.labels, run_on and on_replicas: the values decode, and each bad
// one is an error at its own line naming the field.
func TestPlacementKeys(t *testing.T) {
	t.Parallel()
	src := "replica:\n  labels:\n    zone: eu-1\n    role: batch\njobs:\n  - name: a\n    schedule: \"* * * * *\"\n    shell: x\n" +
		"    run_on: every_replica\n    on_replicas:\n      role: batch\n"
	cfg, err := Parse("ok.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replica.Labels["zone"] != "eu-1" || cfg.Jobs[0].RunOn != "every_replica" || cfg.Jobs[0].OnReplicas["role"] != "batch" {
		t.Errorf("decoded %+v, %+v", cfg.Replica, cfg.Jobs[0])
	}
	bad := "replica:\n  labels:\n    \"a,b\": x\n    zone: \"\"\njobs:\n  - name: a\n    schedule: \"* * * * *\"\n    shell: x\n" +
		"    run_on: all\n    on_replicas: {}\n  - name: b\n    schedule: \"* * * * *\"\n    shell: x\n    on_replicas:\n      role: \"b=c\"\n"
	_, err = Parse("bad.yaml", []byte(bad))
	checkErrors(t, err, []want{
		{"3: replica.labels[\"a,b\"]", `label key "a,b"`},
		{"4: replica.labels.zone", `label value ""`},
		{"9: jobs[0].run_on", `unknown run_on "all"; use one or every_replica`},
		{"10: jobs[0].on_replicas", "must not be empty"},
		{"15: jobs[1].on_replicas.role", `label value "b=c"`},
	})
}
