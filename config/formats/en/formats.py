"""Dates as operators read them in the admin and the dashboard: ISO order, 24-hour clock, no seconds
("2026-12-04 18:50", where Django's English default is "Dec. 4, 2026, 6:50 p.m."), short enough for
a list column at 1280 px (issue 44)."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
