package confdoc

import (
	"github.com/frontdoor-hpc/frontdoor/internal/agent"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// Path is where the reference lives, relative to the module's root.
const Path = "docs/configuration.md"

// Command regenerates the reference.
const Command = "make docs"

const header = `# Configuration reference

<!-- Generated from the configuration types and their doc comments by ` + "`" + Command + "`" + ` (go run ./internal/confdoc/gen).
     Do not edit: change the field's comment or its DefaultConfig() and regenerate. -->

frontdoor reads two YAML files: the gateway's, ` + "`/etc/frontdoor/gateway.yaml`" + ` (the
[gateway configuration](#gateway-configuration)), and on each login node the agent's,
` + "`/etc/frontdoor/agent.yaml`" + ` (the [agent configuration](#agent-configuration)). Commented
examples are in ` + "`configs/`" + `.

- A key left out, or written without a value, takes its default. A key frontdoor does not
  know is an error, with a "did you mean" when a known key is close.
- Durations are written like ` + "`500ms`, `30s`, `5m`, `8h`" + `.
- Relative paths are resolved against the directory of the file that names them.
- Sections marked optional are off unless the file has them.
- ` + "`frontdoor config check FILE`" + ` validates a gateway file without starting anything; every
  problem is reported as ` + "`file:line: key: problem`" + `. A running gateway reloads its file on
  SIGHUP (` + "`frontdoor reload`" + `); a file that does not validate changes nothing.
- In list and map keys, ` + "`[]`" + ` stands for every element of a list and ` + "`<name>`" + ` for any key
  of a map.
`

// Reference renders docs/configuration.md from the source of the module
// rooted at modDir.
func Reference(modDir string) ([]byte, error) {
	d, err := NewDocs(modDir)
	if err != nil {
		return nil, err
	}
	return d.Render(header, []File{
		{
			Title:    "Gateway configuration",
			Intro:    "`frontdoor gateway --config /etc/frontdoor/gateway.yaml`; also read by `frontdoor slurm`, `frontdoor usage`, `frontdoor discover` and `frontdoor config check`. Example: `configs/gateway.yaml` (`configs/gateway-ad.yaml` with Active Directory, `configs/gateway-hyperpod.yaml` with HyperPod discovery).",
			Defaults: config.DefaultConfig(),
		},
		{
			Title:    "Agent configuration",
			Intro:    "`frontdoor agent --config /etc/frontdoor/agent.yaml`, on every login node. Example: `configs/agent.yaml`.",
			Defaults: agent.DefaultConfig(),
			TopLevel: "Top-level keys",
		},
	})
}
