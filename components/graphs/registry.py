"""Registry entries of the graphs family (stgib): data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "synthetic_traffic_graph": "components.graphs.data:SyntheticTrafficGraph",
        "traffic_graph_files": "components.graphs.data:TrafficGraphFiles",
    },
    "models": {"st_graph_forecaster": "components.graphs.model:STGraphForecaster"},
    "tasks": {"graph_forecasting": "components.graphs.task:GraphForecasting"},
}
