"""Zoom into a minute: any minute of any run re-simulated request by request (REQUESTS.md "Zoom")."""

from oncallsim.zoom.minute import ZoomedMinute, zoom_record, zoom_run

__all__ = ["ZoomedMinute", "zoom_record", "zoom_run"]
