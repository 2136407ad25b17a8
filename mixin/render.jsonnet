// Renders everything the mixin makes, keyed by output path relative to the
// repository root (jsonnet -S -m ..). The end-to-end tests render variants
// with short `for`s by passing overrides as a top-level argument
// (--tla-code overrides='{ _config+:: { ... } }').
function(overrides={})
  local mixin = (import 'mixin.libsonnet') + overrides;
  {
    'mixin/generated/alerts.yaml': std.manifestYamlDoc(mixin.prometheusAlerts, quote_keys=false),
    'mixin/generated/rules.yaml': std.manifestYamlDoc(mixin.prometheusRules, quote_keys=false),
  } + {
    ['dashboards/' + name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n'
    for name in std.objectFields(mixin.grafanaDashboards)
  }
