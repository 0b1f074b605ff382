// Builds the Grafana Pyroscope server the end-to-end tests ship to
// (tools/pyroscope/build; see README.md). Nothing here but this file and
// go.sum: `go build github.com/grafana/pyroscope/v2/cmd/pyroscope` builds
// the published module like any dependency.
module ringprof.local/tools/pyroscope

go 1.25.8

tool github.com/grafana/pyroscope/v2/cmd/pyroscope

require github.com/grafana/pyroscope/v2 v2.2.1

// The replace lines of Pyroscope v2.2.1's own go.mod (a dependency's
// replace lines do not apply to the modules that require it): its api and
// lidia submodules at the v2.2.1 commit (the published api v1.5.0 lacks
// what v2.2.1 uses), and its memberlist and yaml.v3 forks.
replace (
	github.com/grafana/pyroscope/api => github.com/grafana/pyroscope/api v1.5.1-0.20260806111011-df3c0391b7df
	github.com/grafana/pyroscope/lidia => github.com/grafana/pyroscope/lidia v0.0.3-0.20260806111011-df3c0391b7df
	github.com/hashicorp/memberlist => github.com/grafana/memberlist v0.3.1-0.20260515134459-1798cf41aca7
	gopkg.in/yaml.v3 => github.com/colega/go-yaml-yaml v0.0.0-20220720105220-255a8d16d094
)
