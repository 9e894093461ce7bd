module github.com/agentmem/agentmem

go 1.26.0

require (
	github.com/adrg/frontmatter v0.2.0
	github.com/cyphar/filepath-securejoin v0.6.1
	github.com/spf13/afero v1.15.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/text v0.44.0
	gopkg.in/yaml.v2 v2.4.0
)

require (
	github.com/BurntSushi/toml v0.3.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
