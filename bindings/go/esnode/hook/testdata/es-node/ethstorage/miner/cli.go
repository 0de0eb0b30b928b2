// Stand-in for es-node's ethstorage/miner/cli.go: the miner's flags (urfave/cli v1), the
// CLIConfig they fill and its copy into Config, grouped and ordered as es-node's.

package miner

import (
	"github.com/urfave/cli"
)

const (
	EnabledFlagName         = "miner.enabled"
	ThreadsPerShardFlagName = "miner.threads-per-shard"

	// proof submission notify
	EmailEnabledFlagName = "miner.email-enabled"
)

func minerEnv(name string) string {
	return "ES_NODE_MINER_" + name
}

func CLIFlags() []cli.Flag {
	flag := []cli.Flag{
		cli.BoolFlag{
			Name:   EnabledFlagName,
			Usage:  "stand-in: mine",
			EnvVar: minerEnv("ENABLED"),
		},
		cli.Uint64Flag{
			Name:   ThreadsPerShardFlagName,
			Usage:  "stand-in: goroutines a shard's nonces are split over",
			Value:  DefaultConfig.ThreadsPerShard,
			EnvVar: minerEnv("THREADS_PER_SHARD"),
		},
		cli.BoolFlag{
			Name:   EmailEnabledFlagName,
			Usage:  "stand-in: mail on a submitted proof",
			EnvVar: minerEnv("EMAIL_ENABLED"),
		},
	}
	return flag
}

type CLIConfig struct {
	Enabled         bool
	ThreadsPerShard uint64
	EmailEnabled    bool
}

func (c CLIConfig) ToMinerConfig() (Config, error) {
	cfg := DefaultConfig
	cfg.ThreadsPerShard = c.ThreadsPerShard
	cfg.EmailEnabled = c.EmailEnabled
	return cfg, nil
}

func ReadCLIConfig(ctx *cli.Context) CLIConfig {
	cfg := CLIConfig{
		Enabled:         ctx.GlobalBool(EnabledFlagName),
		ThreadsPerShard: ctx.GlobalUint64(ThreadsPerShardFlagName),
		EmailEnabled:    ctx.GlobalBool(EmailEnabledFlagName),
	}
	return cfg
}
