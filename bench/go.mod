module github.com/agentmem-sdk/agentmem/bench

go 1.26.0

require (
	github.com/agentmem-sdk/agentmem v0.1.0
	github.com/cyphar/filepath-securejoin v0.6.1
	github.com/spf13/afero v1.15.0
)

require (
	github.com/BurntSushi/toml v0.3.1 // indirect
	github.com/adrg/frontmatter v0.2.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
