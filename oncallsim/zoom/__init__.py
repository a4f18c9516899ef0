"""Zoom into a minute: any minute of any run re-simulated request by request (REQUESTS.md "Zoom"); a chain's
minute replayed with a sample of its requests followed across hops (``zoom.chain``)."""

from oncallsim.zoom.chain import ChainZoom, zoom_chain
from oncallsim.zoom.minute import ZoomedMinute, zoom_record, zoom_run

__all__ = ["ChainZoom", "ZoomedMinute", "zoom_chain", "zoom_record", "zoom_run"]
