module github.com/agentmem/agentmem

go 1.26.0

require (
	github.com/spf13/afero v1.15.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.44.0 // indirect
)
