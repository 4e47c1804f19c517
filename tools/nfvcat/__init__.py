"""nfvcat: catalog of NFV Heat/TOSCA templates and their lifecycle tool."""

__version__ = "0.1.0"
