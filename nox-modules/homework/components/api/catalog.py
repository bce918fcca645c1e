"""The route groups the API serves on every router, in the order they are matched. A
component that brings routes of its own passes its groups to the ApiApp the same way
(ApiApp.mount); the OpenAPI document is generated from the groups mounted here."""
from __future__ import annotations

from .backup import BackupRoutes
from .blocklists import BlocklistRoutes
from .devices import BoardRoutes, DecisionRoutes, StatusRoutes
from .dnsrules import DnsRuleRoutes
from .nearby import NearbyRoutes
from .notifications import NotifyRoutes
from .qos import QosRoutes
from .querylog import QueryLogRoutes
from .satellites import SatelliteRoutes
from .schedules import ScheduleRoutes
from .sessions import SessionRoutes
from .setup import SetupRoutes
from .system import SystemRoutes
from .update import UpdateRoutes
from .usage import UsageRoutes
from .wifi import WifiRoutes

GROUPS = (SessionRoutes, DecisionRoutes, StatusRoutes, BoardRoutes, DnsRuleRoutes, UsageRoutes, NotifyRoutes,
          QueryLogRoutes, ScheduleRoutes, BlocklistRoutes, BackupRoutes, SystemRoutes, QosRoutes, NearbyRoutes,
          WifiRoutes, UpdateRoutes, SatelliteRoutes, SetupRoutes)
