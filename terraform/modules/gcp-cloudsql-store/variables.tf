variable "project_id" {
  description = "Project of the instance."
  type        = string
}

variable "region" {
  description = "Region of the instance."
  type        = string
}

variable "name" {
  description = "Instance name."
  type        = string
}

variable "member" {
  description = "The service account member that connects (serviceAccount:EMAIL); granted roles/cloudsql.client on this instance when connecting through the socket."
  type        = string
}

variable "private_network" {
  description = "VPC network (projects/P/global/networks/N) to give the instance a private IP on, with no public IP; its private services access must exist. null: public IP for the Cloud SQL connectors only, reached through the socket."
  type        = string
  default     = null
}

variable "max_instances" {
  description = "The most service instances that connect at once (max_connections is sized from it)."
  type        = number
}

variable "db_password" {
  description = "Password of the database user sluice. It is in the store_url output, which the caller keeps in a secret."
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
