// A small Grafana dashboard helper library: just what this mixin's
// dashboards use, with no dependency to vendor. Panels are plain
// objects; layout() gives them ids and grid positions, so a dashboard is
// written as rows of panels and every id stays unique and stable.
{
  // The Prometheus datasource every panel, target and annotation uses: the
  // $datasource template variable, so the dashboards work with any
  // datasource name.
  datasource:: { type: 'prometheus', uid: '${datasource}' },

  dashboard(title, uid, description, tags):: {
    title: title,
    uid: uid,
    description: description,
    tags: tags,
    // Provisioned dashboards are changed in the mixin and re-rendered; an
    // edit in Grafana would be lost on the next provisioning.
    editable: false,
    graphTooltip: 1,  // shared crosshair
    refresh: '30s',
    schemaVersion: 39,
    time: { from: 'now-1h', to: 'now' },
    timezone: '',
    links: [{
      type: 'dashboards',
      title: 'Executor dashboards',
      tags: tags,
      asDropdown: true,
      includeVars: true,
      keepTime: true,
      // Required by Grafana's schema (test/grafana); its defaults.
      icon: 'external link',
      tooltip: '',
      targetBlank: false,
    }],
    annotations: { list: [] },
    templating: { list: [] },
    panels: [],
  },

  // target is one PromQL query of a panel. refIds are set by the panel.
  target(expr, legend='', instant=false, format='time_series'):: {
    datasource: $.datasource,
    expr: expr,
    legendFormat: legend,
    [if instant then 'instant']: true,
    [if instant then 'range']: false,
    format: format,
  },

  local withRefIds(targets) = [
    targets[i] { refId: std.char(std.codepoint('A') + i) }
    for i in std.range(0, std.length(targets) - 1)
  ],

  local panel(type, title, description, targets, unit) = {
    type: type,
    title: title,
    description: description,
    datasource: $.datasource,
    targets: withRefIds(targets),
    fieldConfig: { defaults: { unit: unit }, overrides: [] },
    options: {},
  },

  timeseries(title, description, targets, unit='short', stack=false, min=null, max=null):: panel('timeseries', title, description, targets, unit) {
    fieldConfig+: {
      defaults+: {
        [if min != null then 'min']: min,
        [if max != null then 'max']: max,
        custom: {
          drawStyle: 'line',
          lineWidth: 1,
          fillOpacity: if stack then 40 else 10,
          showPoints: 'never',
          spanNulls: false,
          stacking: { mode: if stack then 'normal' else 'none', group: 'A' },
        },
      },
    },
    options: {
      legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  },

  stat(title, description, targets, unit='short', thresholds=null):: panel('stat', title, description, targets, unit) {
    height: 5,
    fieldConfig+: {
      defaults+: {
        [if thresholds != null then 'thresholds']: {
          mode: 'absolute',
          steps: [{ color: 'green', value: null }] + [
            { color: t[1], value: t[0] }
            for t in thresholds
          ],
        },
      },
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      colorMode: 'value',
      graphMode: 'area',
      textMode: 'auto',
      // Required by Grafana's schema (test/grafana); its defaults.
      justifyMode: 'auto',
      orientation: 'auto',
      wideLayout: true,
      showPercentChange: false,
      percentChangeColorMode: 'standard',
    },
  },

  // table shows instant queries, one row per series; labels become columns.
  table(title, description, targets, unit='short'):: panel('table', title, description, targets, unit) {
    transformations: [{ id: 'merge', options: {} }],
    // frameIndex and footer.reducer are required by Grafana's schema
    // (test/grafana); these are its defaults.
    options: { showHeader: true, frameIndex: 0, footer: { show: false, reducer: [] } },
  },

  // Draws the series whose legend matches `pattern` as a dashed line outside
  // the stack: a limit against which stacked usage is read.
  limitLine(pattern):: {
    fieldConfig+: {
      overrides+: [{
        matcher: { id: 'byRegexp', options: pattern },
        properties: [
          { id: 'custom.stacking', value: { mode: 'none', group: 'A' } },
          { id: 'custom.fillOpacity', value: 0 },
          { id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } },
          { id: 'color', value: { mode: 'fixed', fixedColor: 'red' } },
        ],
      }],
    },
  },

  row(title):: { type: 'row', title: title, collapsed: false, panels: [] },

  // layout turns a list of rows (a row() or an array of panels sharing the
  // width 24) into Grafana's flat panel list with ids and positions. Each
  // panel's height is its `height` field, 8 by default.
  layout(rows)::
    local place(acc, item) =
      if std.isArray(item) then
        local n = std.length(item);
        local width = std.floor(24 / n);
        local height = std.foldl(function(h, p) std.max(h, std.get(p, 'height', 8)), item, 0);
        {
          y: acc.y + height,
          panels: acc.panels + [
            item[i] {
              id: std.length(acc.panels) + i + 1,
              gridPos: { x: i * width, y: acc.y, w: if i == n - 1 then 24 - i * width else width, h: height },
            }
            for i in std.range(0, n - 1)
          ],
        }
      else
        {
          y: acc.y + 1,
          panels: acc.panels + [item { id: std.length(acc.panels) + 1, gridPos: { x: 0, y: acc.y, w: 24, h: 1 } }],
        };
    [
      p { height:: null }
      for p in std.foldl(place, rows, { y: 0, panels: [] }).panels
    ],

  datasourceVariable:: {
    type: 'datasource',
    name: 'datasource',
    label: 'Data source',
    query: 'prometheus',
    hide: 0,
    refresh: 1,
    regex: '',
  },

  // queryVariable lists the values of label in the series of selector.
  // includeAll uses '.*' by default, so an empty label (no cluster label, a
  // non-Spark JVM's app_id) still matches; labels always set (job,
  // instance) use '.+'.
  queryVariable(name, label, selector, labelName, multi=true, includeAll=true, allValue='.*'):: {
    local q = 'label_values(%s, %s)' % [selector, labelName],
    type: 'query',
    name: name,
    label: label,
    datasource: $.datasource,
    query: { query: q, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    definition: q,
    hide: 0,
    refresh: 2,  // on time range change: executors come and go
    sort: 1,
    multi: multi,
    includeAll: includeAll,
    [if includeAll then 'allValue']: allValue,
    regex: '',
  },

  // annotation marks events (an OOM kill, an interruption notice) on every
  // time series panel of the dashboard.
  annotation(name, expr, title, text, color):: {
    name: name,
    datasource: $.datasource,
    enable: true,
    expr: expr,
    iconColor: color,
    step: '30s',
    titleFormat: title,
    textFormat: text,
    useValueForTime: false,
  },
}
