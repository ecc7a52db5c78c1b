variable "project_id" {
  description = "Google Cloud project to deploy into."
  type        = string
}

variable "region" {
  description = "Region of the service, the database and the scheduler job, e.g. europe-west1."
  type        = string
}

variable "name" {
  description = "Name of the deployment: the service, the service account (sluice-NAME is not added; NAME is used as is), the database instance and the prefix of the secrets."
  type        = string
  default     = "sluice"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,26}[a-z0-9]$", var.name))
    error_message = "name is 6 to 28 lowercase letters, digits and hyphens, starting with a letter (it names a service account too)."
  }
}

variable "image" {
  description = "The sluice container image (the repository's Dockerfile)."
  type        = string
}

variable "access_keys" {
  description = "SigV4 access keys clients sign with: AKID:SECRET[:ACCOUNT[:TOKEN]],... (SLUICE_ACCESS_KEYS). Stored in Secret Manager; the service reads it from there."
  type        = string
  sensitive   = true

  validation {
    condition     = alltrue([for k in split(",", var.access_keys) : can(regex("^[A-Za-z0-9_-]{1,128}:[^:,\\s]+(:([0-9]{12})?(:[^:,]+)?)?$", trimspace(k)))])
    error_message = "access_keys is AKID:SECRET[:ACCOUNT[:TOKEN]] entries separated by commas."
  }
}

variable "maintenance_token" {
  description = "Bearer token of the maintenance path (SLUICE_MAINTENANCE_TOKEN), at least 32 characters; the scheduler job sends it. Stored in Secret Manager."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.maintenance_token) >= 32
    error_message = "maintenance_token must be at least 32 characters (e.g. openssl rand -hex 32)."
  }
}

variable "db_password" {
  description = "Password of the database user sluice. It reaches the service only inside the store URL secret (SLUICE_STORE from Secret Manager)."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.db_password) >= 16
    error_message = "db_password must be at least 16 characters."
  }
}

variable "db_version" {
  description = "Cloud SQL database version (sluice is tested on PostgreSQL 15)."
  type        = string
  default     = "POSTGRES_15"

  validation {
    condition     = can(regex("^POSTGRES_(1[5-9]|[2-9][0-9])$", var.db_version))
    error_message = "db_version is POSTGRES_15 or later."
  }
}

variable "db_tier" {
  description = "Cloud SQL machine tier. db-f1-micro (shared core) is the cheapest; a Cloud SQL instance is billed while it exists, it does not scale to zero."
  type        = string
  default     = "db-f1-micro"
}

variable "db_disk_size_gb" {
  description = "Initial disk size in GB (grows automatically)."
  type        = number
  default     = 10

  validation {
    condition     = var.db_disk_size_gb >= 10
    error_message = "Cloud SQL disks are 10 GB or more."
  }
}

variable "db_high_availability" {
  description = "A regional (failover) instance instead of a zonal one; doubles the database's cost."
  type        = bool
  default     = false
}

variable "db_deletion_protection" {
  description = "Refuse to destroy the database instance (both Terraform's and Cloud SQL's own protection)."
  type        = bool
  default     = true
}

variable "pool_max_conns" {
  description = "Connections per instance in sluice's pool (pool_max_conns in the store URL); each instance holds one more for LISTEN. The database's max_connections is set from this and max_instances."
  type        = number
  default     = 8

  validation {
    condition     = var.pool_max_conns >= 2 && var.pool_max_conns <= 64
    error_message = "pool_max_conns is 2 to 64."
  }
}

variable "max_instances" {
  description = "Maximum Cloud Run instances."
  type        = number
  default     = 10
}

variable "concurrency" {
  description = "Requests per Cloud Run instance (long polls share one)."
  type        = number
  default     = 1000
}

variable "pubsub_wakeups" {
  description = "Wake long polls across instances through Pub/Sub (a topic and per-instance subscriptions) instead of PostgreSQL LISTEN/NOTIFY. Either works; Pub/Sub suits instances that come and go."
  type        = bool
  default     = false
}

variable "sqs_region" {
  description = "The AWS region name sluice answers as (SLUICE_REGION): what clients sign with and what queue ARNs carry."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.sqs_region))
    error_message = "sqs_region is an AWS region name such as us-east-1."
  }
}

variable "extra_env" {
  description = "More plain SLUICE_* settings (e.g. SLUICE_LOG_FORMAT = \"json\"); secrets are refused."
  type        = map(string)
  default     = {}

  validation {
    condition     = length(setintersection(keys(var.extra_env), ["SLUICE_STORE", "SLUICE_ACCESS_KEYS", "SLUICE_ACCESS_KEYS_FILE", "SLUICE_MAINTENANCE_TOKEN", "SLUICE_WAKEUPS", "SLUICE_REGION"])) == 0
    error_message = "extra_env cannot set what the module sets (SLUICE_STORE, SLUICE_WAKEUPS, SLUICE_REGION) or a secret (SLUICE_ACCESS_KEYS*, SLUICE_MAINTENANCE_TOKEN)."
  }
}

variable "maintenance_schedule" {
  description = "Cron schedule of the maintenance pass."
  type        = string
  default     = "* * * * *"
}
