// es-node stand-in, package miner (ethstorage/miner/cli.go): es-node v0.2.10's miner flags are
// urfave/cli v1 flags defined there (a name constant, a flag in CLIFlags with an environment
// variable from minerEnv, a CLIConfig field read in ReadCLIConfig, copied into Config by
// ToMinerConfig); --miner.pora is added the same way. internal/cli stands in for urfave/cli v1.
// The calls into the adapter are the
// hook's older form; the hook pora-esnode applies is tested on esnode/hook/testdata/es-node.
package esnode_test

import (
	"os"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/internal/cli"
)

const (
	ThreadsPerShardFlagName = "miner.threads-per-shard"
	PoraFlagName            = "miner.pora"
)

// minerEnv is the environment variable of a miner flag (the prefix is the stand-in's).
func minerEnv(name string) string { return "ES_NODE_MINER_" + name }

func CLIFlags() []cli.Flag {
	return []cli.Flag{
		cli.BoolFlag{
			Name:   "miner.enabled",
			Usage:  "Storage mining enabled",
			EnvVar: minerEnv("ENABLED"),
		},
		cli.BoolFlag{
			Name:   PoraFlagName,
			Usage:  "Mine with pora (tasks read the shard files at the device's limit)",
			EnvVar: minerEnv("PORA"),
		},
	}
}

type CLIConfig struct {
	Enabled bool
	Pora    bool
}

func ReadCLIConfig(ctx *cli.Context) CLIConfig {
	cfg := CLIConfig{
		Enabled: ctx.GlobalBool("miner.enabled"),
		Pora:    ctx.GlobalBool(PoraFlagName),
	}
	return cfg
}

func (c CLIConfig) ToMinerConfig() (Config, error) {
	cfg := DefaultConfig
	cfg.Pora = c.Pora
	return cfg, nil
}

// The flag reaches miner.Config.Pora from the command line and from its environment variable,
// and is off when neither sets it.
func TestPoraFlagReachesMinerConfig(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		what string
		args []string
		env  string
		want bool
	}{
		{"no flag", nil, "", false},
		{"--miner.pora", []string{"--miner.pora"}, "", true},
		{"--miner.pora=false", []string{"--miner.pora=false"}, "", false},
		{"ES_NODE_MINER_PORA=true", nil, "true", true},
		{"--miner.pora=false over ES_NODE_MINER_PORA=true", []string{"--miner.pora=false"}, "true", false},
	}
	for _, tc := range cases {
		env[minerEnv("PORA")] = tc.env
		ctx, err := cli.NewContext(CLIFlags(), tc.args, getenv)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		cfg, err := ReadCLIConfig(ctx).ToMinerConfig()
		if err != nil || cfg.Pora != tc.want {
			t.Fatalf("%s: Config.Pora %v (%v), want %v", tc.what, cfg.Pora, err, tc.want)
		}
	}
	if _, err := cli.NewContext(CLIFlags(), []string{"--miner.pora=maybe"}, os.Getenv); err == nil {
		t.Fatal("--miner.pora=maybe was taken")
	}
}
